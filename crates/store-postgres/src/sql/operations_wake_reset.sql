-- Marks pending operations never woken, so that the scheduler wakes them on its next pass: their
-- wake-ups were purged from the broker, or never reached it. Of the kinds in $1 (every kind when
-- empty), among the ids in $2 (every id when empty). Reads the pending rows (the partial index
-- operations_pending_eligible, or the primary key for ids).
UPDATE operations SET last_woken_at = NULL
WHERE status = 'pending' AND last_woken_at IS NOT NULL
  AND (cardinality($1::text[]) = 0 OR kind = ANY($1::text[]))
  AND (cardinality($2::uuid[]) = 0 OR id = ANY($2::uuid[]))
