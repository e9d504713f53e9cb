-- Takes up to $3 reconciling operations of kinds $2 (empty: any) whose reconcile time has come
-- by "now" ($1; NULL: the database's clock), earliest first, skipping rows another reconciler
-- holds, and pushes their next reconcile time to now + $4 ms in the same statement, so that two
-- reconcilers do not run the same hook at once. Walks the partial index
-- operations_reconciling_due (next_eligible_at).
WITH now AS (SELECT coalesce($1::timestamptz, now()) AS t),
due AS (
    SELECT id AS pid FROM operations, now
    WHERE status = 'reconciling' AND next_eligible_at <= now.t
      AND (cardinality($2::text[]) = 0 OR kind = ANY($2))
    ORDER BY next_eligible_at
    LIMIT $3
    FOR UPDATE OF operations SKIP LOCKED
)
UPDATE operations o
SET next_eligible_at = now.t + $4::int8 * interval '1 millisecond',
    reconcile_attempts = o.reconcile_attempts + 1, updated_at = now.t
FROM due, now
WHERE o.id = due.pid
RETURNING o.*
