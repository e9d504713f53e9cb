-- Extends the lease of operation $2 to "now" ($1; NULL: the database's clock) + $4 ms, if it is
-- still running under claim token $3; returns the new lease end (no row: the claim is stale).
-- Walks the primary key.
UPDATE operations
SET lease_until = coalesce($1::timestamptz, now()) + $4::int8 * interval '1 millisecond'
WHERE id = $2 AND claim_token = $3 AND status = 'running'
RETURNING lease_until
