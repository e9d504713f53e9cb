-- Records that the promotions of ?2 (a JSON array of ids) were announced at ?1. Walks the
-- primary key once per id.
UPDATE operations SET alerted_at = ?1
WHERE id IN (SELECT value FROM json_each(?2))
