-- Writes the settlement core decided for operation $2, if it is still reconciling: status $3,
-- terminal reason $4, terminal_at = "now" when $5 (the status is terminal), next_eligible_at $6,
-- remote id $7 (NULL keeps the stored one), last_error $8; the last wake-up is forgotten so that
-- the scheduler wakes a pending one at once. $1 is "now" (NULL: the database's clock). Returns the
-- new status; no row means the operation is missing or not reconciling (reconcile_status.sql
-- tells which). Walks the primary key.
WITH now AS (SELECT coalesce($1::timestamptz, now()) AS t)
UPDATE operations o
SET status = $3, terminal_reason = $4, terminal_at = CASE WHEN $5 THEN now.t END,
    next_eligible_at = $6, remote_id = coalesce($7, o.remote_id), last_error = $8,
    last_woken_at = NULL, updated_at = now.t
FROM now
WHERE o.id = $2 AND o.status = 'reconciling'
RETURNING o.status
