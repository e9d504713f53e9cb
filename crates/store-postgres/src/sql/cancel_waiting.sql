-- Cancels those of operations $2 that are waiting (pending, held or reconciling) at "now" ($1;
-- NULL: the database's clock), as an operator's act; returns the ids cancelled. Running and
-- terminal operations are left alone. Walks the primary key.
WITH now AS (SELECT coalesce($1::timestamptz, now()) AS t)
UPDATE operations o
SET status = 'cancelled', terminal_reason = 'operator', terminal_at = now.t, updated_at = now.t
FROM now
WHERE o.id = ANY($2) AND o.status IN ('pending', 'held', 'reconciling')
RETURNING o.id
