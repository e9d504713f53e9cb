-- Rolling deploy: safe while workers run: yes; the last day's deaths are counted under the
-- migration's write lock, so no death is counted twice or missed. The previous release's workers
-- keep working: the trigger counts their promotions too.

-- Promotions to dead per minute and kind, kept by a trigger as they happen, so that the
-- dashboard's deaths-per-minute chart keeps what died when after a re-drive (the columns mean
-- what they mean on PostgreSQL, migrations/postgres/0031_dead_minutes.sql; one writer at a time,
-- so no shards).
--   minute: the minute's start, in the stored time format ('…T12:34:00.000000Z').
CREATE TABLE dead_minutes (
    minute  TEXT    NOT NULL CHECK (minute GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:00.000000Z'),
    kind    TEXT    NOT NULL,
    dead    INTEGER NOT NULL,
    PRIMARY KEY (minute, kind)
) STRICT;

INSERT INTO dead_minutes (minute, kind, dead)
SELECT substr(terminal_at, 1, 16) || ':00.000000Z', kind, count(*)
FROM operations
WHERE status = 'dead' AND terminal_at >= strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '-1 day')
GROUP BY 1, 2;

CREATE TRIGGER operations_dead_minutes AFTER UPDATE OF status ON operations
WHEN NEW.status = 'dead' AND OLD.status <> 'dead'
BEGIN
    INSERT INTO dead_minutes (minute, kind, dead)
    VALUES (substr(coalesce(NEW.terminal_at, strftime('%Y-%m-%dT%H:%M:%fZ', 'now')), 1, 16)
            || ':00.000000Z', NEW.kind, 1)
    ON CONFLICT (minute, kind) DO UPDATE SET dead = dead + 1;
END;
