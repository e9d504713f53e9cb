-- Rolling deploy: safe while workers run: yes. Adding the column waits for the writes of
-- operation_attempts in progress and holds new ones back until the migration commits, a moment
-- (catalog changes only: no scan, no row rewritten; the column has no default). The previous
-- release keeps working against this schema: its completions do not write the column, and the
-- trigger finds their attempts' dependency by the operation's row, as before.
--
-- Each attempt row records the dependency its operation names when the attempt ends, as the
-- per-minute counts (attempt_minutes, 0013) count it: '' when the operation names none. NULL
-- means not recorded: attempts that ended before this migration or under an earlier release.
-- (An archive restore records it too: an operation's dependency never changes after its
-- enqueue.)
--
-- Why: the per-minute counting trigger looked up every recorded attempt's operation by its
-- primary key to read its dependency (0015), one index probe per attempt in every completion:
-- about 2-3 ms of a completion of 1,000 that took 20-23 ms (EXPLAIN ANALYZE, BENCHMARKS.md,
-- "Figures, 2026-12-06"). The completion updates that very row in the same statement
-- (complete_apply.sql), so it writes the dependency into the attempt row, and the trigger reads
-- it from its transition table. It still looks the operation up for an attempt whose dependency
-- is not recorded, so every writer's attempts are counted under the right dependency.
ALTER TABLE operation_attempts ADD COLUMN dependency text;

CREATE OR REPLACE FUNCTION attempt_minutes_insert() RETURNS trigger LANGUAGE plpgsql
SET jit = off AS $$
BEGIN
    INSERT INTO attempt_minutes AS m (minute, dependency, shard, attempts, failed, snoozed)
    SELECT minute, dependency, pg_backend_pid() % 16,
           count(*),
           count(*) FILTER (WHERE outcome IN ('error', 'rejected', 'vanished', 'unknown')),
           count(*) FILTER (WHERE outcome = 'snoozed')
    FROM (SELECT date_trunc('minute', a.ended_at) AS minute, a.outcome,
                 coalesce(a.dependency,
                          (SELECT o.dependency FROM operations o WHERE o.id = a.operation_id),
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

-- CREATE OR REPLACE sets the function's settings anew: pinned to its own schema again (0019).
DO $$
BEGIN
    EXECUTE format('ALTER FUNCTION attempt_minutes_insert() SET search_path = %s',
                   (SELECT p.pronamespace::regnamespace FROM pg_proc p
                    WHERE p.oid = 'attempt_minutes_insert()'::regprocedure));
END
$$;
