-- Claims the operations named by wake-ups ($2) that are pending, eligible, within their deadline,
-- of the worker's kinds ($3; empty: any) and held back by no control: attempt + 1, a new claim
-- token, a lease of $4 ms, the claimant ($5 worker, $6 code version). $1 is "now" (NULL: the
-- database's clock as the statement starts, sql.rs CLAIM_NOW). Suspects are left out: they are
-- claimed only alone (claim_suspect.sql). Walks the primary key: the rows are found by id alone,
-- locked (skipping rows another claimer holds) and only then checked, because a condition on status
-- beside the ids would let a planner with a stale estimate scan every pending row instead. The ids
-- are given to the walk as an array the planner does not see into (`ARRAY(SELECT unnest($2))`,
-- which it takes for a few ids): seeing 500 ids in a table of 20,000, it read the whole table
-- instead. The claimed rows are updated through the primary key the same way, never by hashing the
-- chosen ids against a sequential scan of the table (claim_eligible.sql).
-- Limits across the fleet as in claim_eligible.sql: the kinds $7 and dependencies $8 are left
-- out, and `chosen` takes at most what a limit with little room allows (claim_capped.sql).
WITH now AS (SELECT coalesce($1::timestamptz, statement_timestamp()) AS t),
locked AS MATERIALIZED (
    SELECT id, status, next_eligible_at, give_up_at, kind, last_failure_class, dependency,
           last_error, suspect
    FROM operations
    WHERE id = ANY (ARRAY(SELECT unnest($2::uuid[])))
    FOR UPDATE SKIP LOCKED
),
picked AS (
    SELECT id AS pid FROM locked, now
    WHERE status = 'pending' AND NOT suspect AND next_eligible_at <= now.t
      AND (give_up_at IS NULL OR give_up_at >= now.t)
      AND (cardinality($3::text[]) = 0 OR kind = ANY($3))
      AND /*not_held_back*/
      AND NOT (kind = ANY($7::text[])) AND (dependency IS NULL OR NOT (dependency = ANY($8::text[])))
),
chosen AS (
    /*chosen*/
)
UPDATE operations o
SET status = 'running', attempt = o.attempt + 1, claim_token = gen_random_uuid(),
    lease_until = now.t + $4::int8 * interval '1 millisecond', claimed_at = now.t,
    worker_id = $5, code_version = $6, isolated = false, updated_at = now.t
FROM now
WHERE o.id = ANY (ARRAY(SELECT pid FROM chosen))
RETURNING o.*
