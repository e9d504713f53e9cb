-- Records that the promotions of operations $2 were announced, at "now" ($1; NULL: the
-- database's clock). Walks the primary key.
UPDATE operations SET alerted_at = coalesce($1::timestamptz, now())
WHERE id = ANY($2)
