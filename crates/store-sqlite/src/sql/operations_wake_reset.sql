-- Marks pending operations never woken, so that the scheduler wakes them on its next pass: their
-- wake-ups were purged from the broker, or never reached it. Of the kinds in ?1 (a JSON array;
-- every kind when empty), among the ids in ?2 (a JSON array; every id when empty).
UPDATE operations SET last_woken_at = NULL
WHERE status = 'pending' AND last_woken_at IS NOT NULL
  AND (json_array_length(?1) = 0 OR kind IN (SELECT value FROM json_each(?1)))
  AND (json_array_length(?2) = 0 OR id IN (SELECT value FROM json_each(?2)))
