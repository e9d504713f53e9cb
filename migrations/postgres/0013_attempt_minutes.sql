-- Attempts that ended, per minute and dependency, kept by a trigger in the statements that record
-- them, so that `oprec stats` ("attempts in the last hour by dependency") and the dashboard's
-- per-minute chart read at most a day of minutes instead of every attempt row of the period (at
-- 500 attempts/s, 1.8 million rows an hour, joined to their operations). The counts are history:
-- retention removing the attempt rows leaves them; the maintenance leader removes minutes older
-- than two days (the chart covers at most one).
--
-- One statement-level trigger with a transition table folds a completion batch into one upsert
-- per (minute, dependency); rows are sharded by backend (16 shards) so that concurrent writers
-- update different rows instead of queueing on one. Only the sums over shards mean anything.
--   attempts: every attempt that ended in the minute;
--   failed:   those that ended in error, rejected, vanished or unknown;
--   snoozed:  those that gave the attempt back for backpressure (not counted as attempts by
--             dependency, which counts the calls made to it).
--
-- Rolling deploy: safe while workers run: they keep working, but completions wait while the last
-- day's attempts are counted (a moment at hundreds of thousands of rows, seconds at tens of
-- millions), so that no attempt is counted twice or missed. The previous release's workers keep
-- working against this schema: the trigger counts their attempts; its `stats` reads the attempt
-- rows as before.
CREATE TABLE attempt_minutes (
    minute      timestamptz NOT NULL CHECK (minute = date_trunc('minute', minute)),
    -- '' when the operation's kind names no dependency (a primary key cannot hold NULL).
    dependency  text        NOT NULL,
    shard       smallint    NOT NULL CHECK (shard BETWEEN 0 AND 15),
    attempts    bigint      NOT NULL,
    failed      bigint      NOT NULL,
    snoozed     bigint      NOT NULL,
    PRIMARY KEY (minute, dependency, shard)
);

CREATE FUNCTION attempt_minutes_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO attempt_minutes AS m (minute, dependency, shard, attempts, failed, snoozed)
    SELECT date_trunc('minute', a.ended_at), coalesce(o.dependency, ''), pg_backend_pid() % 16,
           count(*),
           count(*) FILTER (WHERE a.outcome IN ('error', 'rejected', 'vanished', 'unknown')),
           count(*) FILTER (WHERE a.outcome = 'snoozed')
    FROM new_rows a
    JOIN operations o ON o.id = a.operation_id
    GROUP BY 1, 2
    ORDER BY 1, 2
    ON CONFLICT (minute, dependency, shard) DO UPDATE
    SET attempts = m.attempts + excluded.attempts,
        failed = m.failed + excluded.failed,
        snoozed = m.snoozed + excluded.snoozed;
    RETURN NULL;
END
$$;

-- Completions wait from here to the end of the migration: the count below and the trigger see
-- the same rows.
LOCK TABLE operation_attempts IN SHARE ROW EXCLUSIVE MODE;

CREATE TRIGGER operation_attempts_minutes AFTER INSERT ON operation_attempts
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION attempt_minutes_insert();

INSERT INTO attempt_minutes (minute, dependency, shard, attempts, failed, snoozed)
SELECT date_trunc('minute', a.ended_at), coalesce(o.dependency, ''), 0,
       count(*),
       count(*) FILTER (WHERE a.outcome IN ('error', 'rejected', 'vanished', 'unknown')),
       count(*) FILTER (WHERE a.outcome = 'snoozed')
FROM operation_attempts a
JOIN operations o ON o.id = a.operation_id
WHERE a.ended_at >= now() - interval '1 day'
GROUP BY 1, 2;
