-- Records that wake-ups were published for operations $2, at $1 (NULL: the database's clock).
-- Walks the primary key: the ids come as an array the planner does not see into, so that a batch
-- of 1,000 ids in a table of a few tens of thousands is not taken for a reason to read them all
-- (claim_by_ids.sql).
UPDATE operations SET last_woken_at = coalesce($1::timestamptz, now())
WHERE id = ANY (ARRAY(SELECT unnest($2::uuid[])))
