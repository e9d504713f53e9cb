-- Rolling deploy: safe while workers run: one nullable column, the trigger-kept operation_counts
-- rebuilt with one more key column and counted again from the table, and the originals that
-- already have a copy marked, all under the write lock for one pass over the table. From here on
-- the database marks every original when its copy is inserted, whichever release inserts it.
--
-- redriven_as: the copy that re-drives this operation as new (the operation whose redrive_of
-- names this one), once one exists. A dead operation re-driven as new is no longer dead awaiting
-- action: its copy carries the work on. It keeps status 'dead' (the status names are a contract,
-- and its history is that it died), and every count of dead work (oprec stats, the
-- oprec_dead_operations gauge, ops list --status dead, the dashboard) leaves it out and counts it
-- as re-driven instead. No foreign key: the copy may later be archived or pruned, and the
-- original was re-driven all the same.
ALTER TABLE operations ADD COLUMN redriven_as TEXT
    CHECK (length(redriven_as) = 36 AND redriven_as NOT GLOB '*[^0-9a-f-]*');

-- The originals re-driven before this migration, marked with their (first) copy.
UPDATE operations
SET redriven_as = (SELECT c.id FROM operations AS c
                   WHERE c.redrive_of = operations.id AND c.redrive_duplicate = 0),
    updated_at = max(updated_at, (SELECT c.created_at FROM operations AS c
                                  WHERE c.redrive_of = operations.id AND c.redrive_duplicate = 0))
WHERE redriven_as IS NULL
  AND id IN (SELECT redrive_of FROM operations WHERE redrive_of IS NOT NULL AND redrive_duplicate = 0);

-- The counts gain the flag, so dead awaiting action and dead re-driven are read apart: the table
-- and its triggers are made again, and counted from the table once.
DROP TRIGGER operations_count_insert;
DROP TRIGGER operations_count_update;
DROP TRIGGER operations_count_delete;
DROP TABLE operation_counts;

CREATE TABLE operation_counts (
    kind           TEXT    NOT NULL,
    status         TEXT    NOT NULL CHECK (status IN
                       ('pending', 'running', 'reconciling', 'held', 'succeeded', 'dead', 'cancelled')),
    -- '' when the operation has not failed (a primary key cannot hold NULL).
    failure_class  TEXT    NOT NULL CHECK (failure_class IN
                       ('', 'transient', 'rate_limited', 'backpressure', 'permanent', 'configuration', 'unknown')),
    -- 1 when the operations are re-driven as new (redriven_as is set).
    redriven       INTEGER NOT NULL CHECK (redriven IN (0, 1)),
    operations     INTEGER NOT NULL,
    attempts       INTEGER NOT NULL,
    PRIMARY KEY (kind, status, failure_class, redriven)
) STRICT;

INSERT INTO operation_counts (kind, status, failure_class, redriven, operations, attempts)
SELECT kind, status, coalesce(last_failure_class, ''), redriven_as IS NOT NULL, count(*),
       coalesce(sum(attempt), 0)
FROM operations
GROUP BY 1, 2, 3, 4;

CREATE TRIGGER operations_count_insert AFTER INSERT ON operations
BEGIN
    INSERT INTO operation_counts (kind, status, failure_class, redriven, operations, attempts)
    VALUES (NEW.kind, NEW.status, coalesce(NEW.last_failure_class, ''),
            NEW.redriven_as IS NOT NULL, 1, NEW.attempt)
    ON CONFLICT (kind, status, failure_class, redriven) DO UPDATE
    SET operations = operations + 1, attempts = attempts + excluded.attempts;
END;

CREATE TRIGGER operations_count_update
AFTER UPDATE OF kind, status, last_failure_class, attempt, redriven_as ON operations
WHEN OLD.kind IS NOT NEW.kind OR OLD.status IS NOT NEW.status
  OR OLD.last_failure_class IS NOT NEW.last_failure_class OR OLD.attempt IS NOT NEW.attempt
  OR (OLD.redriven_as IS NULL) IS NOT (NEW.redriven_as IS NULL)
BEGIN
    INSERT INTO operation_counts (kind, status, failure_class, redriven, operations, attempts)
    VALUES (OLD.kind, OLD.status, coalesce(OLD.last_failure_class, ''),
            OLD.redriven_as IS NOT NULL, -1, -OLD.attempt)
    ON CONFLICT (kind, status, failure_class, redriven) DO UPDATE
    SET operations = operations - 1, attempts = attempts + excluded.attempts;
    INSERT INTO operation_counts (kind, status, failure_class, redriven, operations, attempts)
    VALUES (NEW.kind, NEW.status, coalesce(NEW.last_failure_class, ''),
            NEW.redriven_as IS NOT NULL, 1, NEW.attempt)
    ON CONFLICT (kind, status, failure_class, redriven) DO UPDATE
    SET operations = operations + 1, attempts = attempts + excluded.attempts;
END;

CREATE TRIGGER operations_count_delete AFTER DELETE ON operations
BEGIN
    INSERT INTO operation_counts (kind, status, failure_class, redriven, operations, attempts)
    VALUES (OLD.kind, OLD.status, coalesce(OLD.last_failure_class, ''),
            OLD.redriven_as IS NOT NULL, -1, -OLD.attempt)
    ON CONFLICT (kind, status, failure_class, redriven) DO UPDATE
    SET operations = operations - 1, attempts = attempts + excluded.attempts;
END;

-- A copy marks its original as it is inserted (a re-drive as new, a restore from an archive, a
-- statement written by hand); the original is found by primary key. A duplicate copy (made
-- before 0009) never replaces the first copy's mark.
CREATE TRIGGER operations_mark_redriven AFTER INSERT ON operations
WHEN NEW.redrive_of IS NOT NULL AND NEW.redrive_duplicate = 0
BEGIN
    UPDATE operations
    SET redriven_as = NEW.id, updated_at = max(updated_at, NEW.created_at)
    WHERE id = NEW.redrive_of AND redriven_as IS NULL;
END;
