-- Rolling deploy: safe while workers run: a new table counted once from the operations not yet
-- ended, under the write lock this migration holds (writers wait that long), and triggers that
-- keep it from then on, whichever release writes. The previous release's `stats` reads the
-- waiting rows as before.
--
-- Operations not yet ended (pending, running, reconciling, held), counted by the five-minute slot
-- of their creation time (the text of the slot's start, as created_at is written), so that
-- `oprec stats`' "backlog by age" reads one row per slot of backlog instead of every waiting row.
-- Claims, heartbeats and retries move an operation between waiting statuses and write nothing
-- here. The maintenance leader removes the slots that count nothing. As on PostgreSQL
-- (migrations/postgres/0020_backlog_slots.sql), without shards: SQLite has one writer at a time.
CREATE TABLE backlog_slots (
    slot        TEXT    NOT NULL PRIMARY KEY
                CHECK (slot GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-5][05]:00.000000Z'),
    operations  INTEGER NOT NULL
) STRICT;

INSERT INTO backlog_slots (slot, operations)
SELECT substr(created_at, 1, 15) || CASE WHEN substr(created_at, 16, 1) < '5' THEN '0' ELSE '5' END
       || ':00.000000Z',
       count(*)
FROM operations
WHERE status IN ('pending', 'running', 'reconciling', 'held')
GROUP BY 1;

CREATE TRIGGER operations_backlog_insert AFTER INSERT ON operations
WHEN NEW.status IN ('pending', 'running', 'reconciling', 'held')
BEGIN
    INSERT INTO backlog_slots (slot, operations)
    VALUES (substr(NEW.created_at, 1, 15)
            || CASE WHEN substr(NEW.created_at, 16, 1) < '5' THEN '0' ELSE '5' END
            || ':00.000000Z', 1)
    ON CONFLICT (slot) DO UPDATE SET operations = operations + 1;
END;

CREATE TRIGGER operations_backlog_update AFTER UPDATE OF status, created_at ON operations
WHEN (OLD.status IN ('pending', 'running', 'reconciling', 'held'))
         IS NOT (NEW.status IN ('pending', 'running', 'reconciling', 'held'))
  OR OLD.created_at IS NOT NEW.created_at
BEGIN
    INSERT INTO backlog_slots (slot, operations)
    SELECT substr(OLD.created_at, 1, 15)
           || CASE WHEN substr(OLD.created_at, 16, 1) < '5' THEN '0' ELSE '5' END
           || ':00.000000Z', -1
    WHERE OLD.status IN ('pending', 'running', 'reconciling', 'held')
    ON CONFLICT (slot) DO UPDATE SET operations = operations - 1;
    INSERT INTO backlog_slots (slot, operations)
    SELECT substr(NEW.created_at, 1, 15)
           || CASE WHEN substr(NEW.created_at, 16, 1) < '5' THEN '0' ELSE '5' END
           || ':00.000000Z', 1
    WHERE NEW.status IN ('pending', 'running', 'reconciling', 'held')
    ON CONFLICT (slot) DO UPDATE SET operations = operations + 1;
END;

CREATE TRIGGER operations_backlog_delete AFTER DELETE ON operations
WHEN OLD.status IN ('pending', 'running', 'reconciling', 'held')
BEGIN
    INSERT INTO backlog_slots (slot, operations)
    VALUES (substr(OLD.created_at, 1, 15)
            || CASE WHEN substr(OLD.created_at, 16, 1) < '5' THEN '0' ELSE '5' END
            || ':00.000000Z', -1)
    ON CONFLICT (slot) DO UPDATE SET operations = operations - 1;
END;
