-- Claims one suspect (an operation whose last attempt vanished) of the worker's kinds ($2;
-- empty: any) that is pending, eligible, within its deadline and held back by no control, oldest
-- eligible first, skipping rows another claimer holds, to run isolated: alone in its worker.
-- attempt + 1, a new claim token, a lease of $3 ms, the claimant ($4 worker, $5 code version),
-- isolated. $1 is "now" (NULL: the database's clock as the statement starts, sql.rs CLAIM_NOW). Walks the partial index
-- operations_pending_suspect, which holds only waiting suspects. The kinds $6 and dependencies
-- $7 are left out: a limit across the fleet lets them take nothing now (claim_eligible.sql).
WITH now AS (SELECT coalesce($1::timestamptz, statement_timestamp()) AS t),
picked AS (
    SELECT id AS pid FROM operations
    WHERE status = 'pending' AND suspect
      AND next_eligible_at <= coalesce($1::timestamptz, statement_timestamp())
      AND (give_up_at IS NULL OR give_up_at >= coalesce($1::timestamptz, statement_timestamp()))
      AND (cardinality($2::text[]) = 0 OR kind = ANY($2))
      AND /*not_held_back*/
      AND NOT (kind = ANY($6::text[])) AND (dependency IS NULL OR NOT (dependency = ANY($7::text[])))
    ORDER BY next_eligible_at, id
    LIMIT 1
    FOR UPDATE OF operations SKIP LOCKED
)
UPDATE operations o
SET status = 'running', attempt = o.attempt + 1, claim_token = gen_random_uuid(),
    lease_until = now.t + $3::int8 * interval '1 millisecond', claimed_at = now.t,
    worker_id = $4, code_version = $5, isolated = true, updated_at = now.t
FROM picked, now
WHERE o.id = picked.pid
RETURNING o.*
