-- Rolling deploy: safe while workers run: catalog changes to the trigger functions only, no
-- table lock, no scan; sessions plan the triggers' statements anew on their next call.
--
-- The triggers' statements are planned alike whatever the caller's settings and whatever the
-- statistics say (autovacuum may be off; a table may never have been analyzed).
--
-- 1. No JIT compilation. A trigger's statement is planned with its caller's settings, and the
--    claim walks the pending index in a transaction that sets enable_sort = off (store-postgres
--    sql.rs, WALK_PENDING_IN_ORDER): the count upsert's ORDER BY then carried the planner's
--    "disabled" price (10^10), far above jit_above_cost, and PostgreSQL spent about 180 ms
--    compiling it on every claim of 1,000 operations (a drain of 8,300 operations/s where the
--    same work without it ran at 16,000). These statements fold a few thousand rows at most:
--    compiling them never pays.
-- 2. The per-minute trigger finds each attempt's dependency by the operation's primary key, one
--    row at a time, instead of a join the planner may turn into a hash join over the whole
--    operations table on every completion batch (it did, for tables of about 100,000 rows
--    whose statistics were missing: the cost of a completion then grew with the table).
ALTER FUNCTION operation_counts_insert() SET jit = off;
ALTER FUNCTION operation_counts_update() SET jit = off;
ALTER FUNCTION operation_counts_delete() SET jit = off;
ALTER FUNCTION operation_counts_truncate() SET jit = off;

CREATE OR REPLACE FUNCTION attempt_minutes_insert() RETURNS trigger LANGUAGE plpgsql
SET jit = off AS $$
BEGIN
    INSERT INTO attempt_minutes AS m (minute, dependency, shard, attempts, failed, snoozed)
    SELECT minute, dependency, pg_backend_pid() % 16,
           count(*),
           count(*) FILTER (WHERE outcome IN ('error', 'rejected', 'vanished', 'unknown')),
           count(*) FILTER (WHERE outcome = 'snoozed')
    FROM (SELECT date_trunc('minute', a.ended_at) AS minute, a.outcome,
                 coalesce((SELECT o.dependency FROM operations o WHERE o.id = a.operation_id),
                          '') AS dependency
          FROM new_rows a) AS ended
    GROUP BY 1, 2
    ORDER BY 1, 2
    ON CONFLICT (minute, dependency, shard) DO UPDATE
    SET attempts = m.attempts + excluded.attempts,
        failed = m.failed + excluded.failed,
        snoozed = m.snoozed + excluded.snoozed;
    RETURN NULL;
END
$$;
