-- Records that wake-ups were published for operations $2, at $1 (NULL: the database's clock).
-- Walks the primary key.
UPDATE operations SET last_woken_at = coalesce($1::timestamptz, now())
WHERE id = ANY($2)
