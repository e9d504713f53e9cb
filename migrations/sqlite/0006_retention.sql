-- Counts of operations per (kind, status, last failure class), kept by triggers in the same
-- statements that change them, so that `oprec stats` and the metrics gauges read a few rows
-- instead of counting the table. `attempts` sums the `attempt` column (attempts per success
-- without joining operation_attempts). SQLite has one writer at a time, so one row per group
-- serves (PostgreSQL shards its rows by backend).
--
-- Rolling deploy: safe while workers run: yes; it takes the write lock for one count of the table.
CREATE TABLE operation_counts (
    kind           TEXT    NOT NULL,
    status         TEXT    NOT NULL CHECK (status IN
                       ('pending', 'running', 'reconciling', 'held', 'succeeded', 'dead', 'cancelled')),
    -- '' when the operation has not failed (a primary key cannot hold NULL).
    failure_class  TEXT    NOT NULL CHECK (failure_class IN
                       ('', 'transient', 'rate_limited', 'backpressure', 'permanent', 'configuration', 'unknown')),
    operations     INTEGER NOT NULL,
    attempts       INTEGER NOT NULL,
    PRIMARY KEY (kind, status, failure_class)
) STRICT;

INSERT INTO operation_counts (kind, status, failure_class, operations, attempts)
SELECT kind, status, coalesce(last_failure_class, ''), count(*), coalesce(sum(attempt), 0)
FROM operations
GROUP BY 1, 2, 3;

CREATE TRIGGER operations_count_insert AFTER INSERT ON operations
BEGIN
    INSERT INTO operation_counts (kind, status, failure_class, operations, attempts)
    VALUES (NEW.kind, NEW.status, coalesce(NEW.last_failure_class, ''), 1, NEW.attempt)
    ON CONFLICT (kind, status, failure_class) DO UPDATE
    SET operations = operations + 1, attempts = attempts + excluded.attempts;
END;

CREATE TRIGGER operations_count_update AFTER UPDATE OF kind, status, last_failure_class, attempt
ON operations
WHEN OLD.kind IS NOT NEW.kind OR OLD.status IS NOT NEW.status
  OR OLD.last_failure_class IS NOT NEW.last_failure_class OR OLD.attempt IS NOT NEW.attempt
BEGIN
    INSERT INTO operation_counts (kind, status, failure_class, operations, attempts)
    VALUES (OLD.kind, OLD.status, coalesce(OLD.last_failure_class, ''), -1, -OLD.attempt)
    ON CONFLICT (kind, status, failure_class) DO UPDATE
    SET operations = operations - 1, attempts = attempts + excluded.attempts;
    INSERT INTO operation_counts (kind, status, failure_class, operations, attempts)
    VALUES (NEW.kind, NEW.status, coalesce(NEW.last_failure_class, ''), 1, NEW.attempt)
    ON CONFLICT (kind, status, failure_class) DO UPDATE
    SET operations = operations + 1, attempts = attempts + excluded.attempts;
END;

CREATE TRIGGER operations_count_delete AFTER DELETE ON operations
BEGIN
    INSERT INTO operation_counts (kind, status, failure_class, operations, attempts)
    VALUES (OLD.kind, OLD.status, coalesce(OLD.last_failure_class, ''), -1, -OLD.attempt)
    ON CONFLICT (kind, status, failure_class) DO UPDATE
    SET operations = operations - 1, attempts = attempts + excluded.attempts;
END;
