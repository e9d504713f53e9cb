-- Records that wake-ups were published (?2, a JSON array of ids) at ?1. Walks the primary key
-- once per id.
UPDATE operations SET last_woken_at = ?1
WHERE id IN (SELECT value FROM json_each(?2))
