-- Up to $2 running operations whose lease expired before "now" ($1; NULL: the database's
-- clock), longest expired first, with their claim tokens, for the rescuer to decide on. Reads
-- only: the decision is applied by complete_apply.sql, fenced by token and expiry. Walks the
-- partial index operations_running_lease (lease_until).
SELECT * FROM operations
WHERE status = 'running' AND lease_until < coalesce($1::timestamptz, now())
ORDER BY lease_until
LIMIT $2
