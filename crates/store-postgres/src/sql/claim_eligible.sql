-- Claims up to $3 operations of the worker's kinds ($2; empty: any) that are pending, eligible,
-- within their deadline and held back by no control, skipping rows another claimer holds:
-- attempt + 1, a new claim token, a lease of $4 ms, the claimant ($5 worker, $6 code version).
-- $1 is "now" (NULL: the database's clock as the statement starts, sql.rs CLAIM_NOW).
-- Suspects are left out: they are claimed only alone (claim_suspect.sql).
--
-- The order (README, "Priorities"): first the operations eligible for longer than $7 ms (the
-- aging period, core's PRIORITY_AGING), oldest eligible first, whatever their priority; then
-- each priority level of $8 in turn (core's PRIORITY_LEVELS, highest first), oldest eligible
-- first within it. The aged walk reads the partial index operations_pending_eligible
-- (next_eligible_at, id) up to the aging cut; each level reads operations_pending_priority
-- (priority, next_eligible_at, id) between the cut and now, so no level reads a row that is not
-- yet eligible. Each walk locks rows only as they are pulled and the LIMIT stops pulling at $3
-- rows, so a claim reads at most $3 rows past the empty ranges. It runs in a transaction opened
-- with WALK_PENDING_IN_ORDER (sql.rs), so that the planner never fetches and sorts every pending
-- row instead.
--
-- A level's range is written as two row comparisons on (priority, next_eligible_at), ordered by
-- priority first, so that only operations_pending_priority can serve it: written as
-- `priority = level` with the order of next_eligible_at alone, operations_pending_eligible served
-- it too, and statistics saying that every operation has priority 0 (the usual case, analyzed)
-- made the planner take it, filtering on priority: each empty level (2 and 1) then read every
-- eligible row, 105 ms of a claim of 600 from a backlog of 100,000 (27 ms now).
--
-- The claimed rows are then updated through the primary key (`id = ANY (ARRAY(...))`): joined to
-- the picked ids instead, the planner hashed them against a sequential scan of the whole table
-- for claims of a few hundred (30,000 rows read for each claim of 300 from a table of 30,000;
-- 100,000 for a claim of 1,000 from 100,000).
--
-- Limits across the fleet (core's ClaimAllowance; README, "Limits across the fleet"): the walks
-- leave out the kinds $9 and dependencies $10 that may take nothing now, so they do not use up
-- the batch; `chosen` is every picked row, or, when some limit has room for only a few
-- (claim_capped.sql, spliced in by sql.rs), at most that many of each.
WITH now AS (SELECT coalesce($1::timestamptz, statement_timestamp()) AS t),
aged AS (
    SELECT id FROM operations
    WHERE status = 'pending' AND NOT suspect
      AND next_eligible_at <= coalesce($1::timestamptz, statement_timestamp()) - $7::int8 * interval '1 millisecond'
      AND (give_up_at IS NULL OR give_up_at >= coalesce($1::timestamptz, statement_timestamp()))
      AND (cardinality($2::text[]) = 0 OR kind = ANY($2))
      AND /*not_held_back_aged*/
      AND NOT (kind = ANY($9::text[])) AND (dependency IS NULL OR NOT (dependency = ANY($10::text[])))
    ORDER BY next_eligible_at, id
    LIMIT $3
    FOR UPDATE OF operations SKIP LOCKED
),
leveled AS (
    SELECT l.id
    FROM unnest($8::int2[]) AS level(priority)
    CROSS JOIN LATERAL (
        SELECT id FROM operations
        WHERE status = 'pending' AND NOT suspect
          AND (priority, next_eligible_at)
              > (level.priority, coalesce($1::timestamptz, statement_timestamp()) - $7::int8 * interval '1 millisecond')
          AND (priority, next_eligible_at) <= (level.priority, coalesce($1::timestamptz, statement_timestamp()))
          AND (give_up_at IS NULL OR give_up_at >= coalesce($1::timestamptz, statement_timestamp()))
          AND (cardinality($2::text[]) = 0 OR kind = ANY($2))
          AND /*not_held_back*/
          AND NOT (kind = ANY($9::text[]))
          AND (dependency IS NULL OR NOT (dependency = ANY($10::text[])))
        ORDER BY priority, next_eligible_at, id
        LIMIT $3
        FOR UPDATE OF operations SKIP LOCKED
    ) AS l
),
picked AS (
    SELECT id AS pid FROM aged
    UNION ALL
    SELECT id FROM leveled
    LIMIT $3
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
