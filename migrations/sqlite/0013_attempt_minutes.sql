-- Rolling deploy: safe while workers run: yes; it takes the write lock while the last day's
-- attempts are counted.
-- Attempts that ended, per minute and dependency, kept by a trigger in the statements that record
-- them, so that `oprec stats` ("attempts in the last hour by dependency") and the dashboard's
-- per-minute chart read at most a day of minutes instead of every attempt row of the period. The
-- counts are history: retention removing the attempt rows leaves them; the maintenance leader
-- removes minutes older than two days (the chart covers at most one). SQLite has one writer at a
-- time, so one row per (minute, dependency) serves (PostgreSQL shards its rows by backend).
--   minute:   the minute's start, in the stored time format ('…T12:34:00.000000Z');
--   attempts: every attempt that ended in the minute;
--   failed:   those that ended in error, rejected, vanished or unknown;
--   snoozed:  those that gave the attempt back for backpressure.
CREATE TABLE attempt_minutes (
    minute      TEXT    NOT NULL CHECK (minute GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:00.000000Z'),
    -- '' when the operation's kind names no dependency (a primary key cannot hold NULL).
    dependency  TEXT    NOT NULL,
    attempts    INTEGER NOT NULL,
    failed      INTEGER NOT NULL,
    snoozed     INTEGER NOT NULL,
    PRIMARY KEY (minute, dependency)
) STRICT;

INSERT INTO attempt_minutes (minute, dependency, attempts, failed, snoozed)
SELECT substr(a.ended_at, 1, 16) || ':00.000000Z', coalesce(o.dependency, ''),
       count(*),
       sum(a.outcome IN ('error', 'rejected', 'vanished', 'unknown')),
       sum(a.outcome = 'snoozed')
FROM operation_attempts a
JOIN operations o ON o.id = a.operation_id
WHERE a.ended_at >= strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '-1 day')
GROUP BY 1, 2;

CREATE TRIGGER operation_attempts_minutes AFTER INSERT ON operation_attempts
BEGIN
    INSERT INTO attempt_minutes (minute, dependency, attempts, failed, snoozed)
    SELECT substr(NEW.ended_at, 1, 16) || ':00.000000Z', coalesce(o.dependency, ''), 1,
           NEW.outcome IN ('error', 'rejected', 'vanished', 'unknown'),
           NEW.outcome = 'snoozed'
    FROM operations o
    WHERE o.id = NEW.operation_id
    ON CONFLICT (minute, dependency) DO UPDATE
    SET attempts = attempts + excluded.attempts,
        failed = failed + excluded.failed,
        snoozed = snoozed + excluded.snoozed;
END;
