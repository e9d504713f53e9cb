-- Rolling deploy: safe while workers run: adds one nullable column (no rewrite), gives the small
-- trigger-kept operation_counts one more key column (rewritten under its lock for a moment, so
-- writers to operations wait that long), and marks the originals that already have a copy (one
-- UPDATE over the re-driven copies). From here on the database marks every original when its
-- copy is inserted, whichever release inserts it, so re-drives run by the previous release's
-- processes while this deploys are marked too.
--
-- redriven_as: the copy that re-drives this operation as new (the operation whose redrive_of
-- names this one), once one exists. A dead operation re-driven as new is no longer dead awaiting
-- action: its copy carries the work on. It keeps status 'dead' (the status names are a contract,
-- and its history is that it died), and every count of dead work (oprec stats, the
-- oprec_dead_operations gauge, ops list --status dead, the dashboard) leaves it out and counts it
-- as re-driven instead. No foreign key: the copy may later be archived or pruned, and the
-- original was re-driven all the same.
ALTER TABLE operations ADD COLUMN redriven_as uuid;

-- The counts gain the flag, so dead awaiting action and dead re-driven are read apart.
ALTER TABLE operation_counts ADD COLUMN redriven boolean NOT NULL DEFAULT false;
ALTER TABLE operation_counts DROP CONSTRAINT operation_counts_pkey;
ALTER TABLE operation_counts ADD PRIMARY KEY (kind, status, failure_class, redriven, shard);

CREATE OR REPLACE FUNCTION operation_counts_insert() RETURNS trigger LANGUAGE plpgsql
SET jit = off AS $$
BEGIN
    INSERT INTO operation_counts AS c (kind, status, failure_class, redriven, shard, operations,
                                       attempts)
    SELECT kind, status, coalesce(last_failure_class, ''), redriven_as IS NOT NULL,
           pg_backend_pid() % 16, count(*), coalesce(sum(attempt), 0)
    FROM new_rows
    GROUP BY 1, 2, 3, 4
    ORDER BY 1, 2, 3, 4
    ON CONFLICT (kind, status, failure_class, redriven, shard) DO UPDATE
    SET operations = c.operations + excluded.operations, attempts = c.attempts + excluded.attempts;
    RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION operation_counts_update() RETURNS trigger LANGUAGE plpgsql
SET jit = off AS $$
BEGIN
    -- Old rows counted out, new rows counted in; groups that net to nothing (a heartbeat, a
    -- wake-up mark) write nothing.
    INSERT INTO operation_counts AS c (kind, status, failure_class, redriven, shard, operations,
                                       attempts)
    SELECT kind, status, failure_class, redriven, pg_backend_pid() % 16, sum(n), sum(a)
    FROM (SELECT kind, status, coalesce(last_failure_class, '') AS failure_class,
                 redriven_as IS NOT NULL AS redriven, -1 AS n, -attempt::int8 AS a
          FROM old_rows
          UNION ALL
          SELECT kind, status, coalesce(last_failure_class, ''), redriven_as IS NOT NULL, 1,
                 attempt::int8
          FROM new_rows) AS d
    GROUP BY 1, 2, 3, 4
    HAVING sum(n) <> 0 OR sum(a) <> 0
    ORDER BY 1, 2, 3, 4
    ON CONFLICT (kind, status, failure_class, redriven, shard) DO UPDATE
    SET operations = c.operations + excluded.operations, attempts = c.attempts + excluded.attempts;
    RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION operation_counts_delete() RETURNS trigger LANGUAGE plpgsql
SET jit = off AS $$
BEGIN
    INSERT INTO operation_counts AS c (kind, status, failure_class, redriven, shard, operations,
                                       attempts)
    SELECT kind, status, coalesce(last_failure_class, ''), redriven_as IS NOT NULL,
           pg_backend_pid() % 16, -count(*), -coalesce(sum(attempt), 0)
    FROM old_rows
    GROUP BY 1, 2, 3, 4
    ORDER BY 1, 2, 3, 4
    ON CONFLICT (kind, status, failure_class, redriven, shard) DO UPDATE
    SET operations = c.operations + excluded.operations, attempts = c.attempts + excluded.attempts;
    RETURN NULL;
END
$$;

-- A copy marks its original as it is inserted (a re-drive as new, a restore from an archive, a
-- statement written by hand): only rows that re-drive something run it (the WHEN clause is
-- checked without calling the function), and the original is found by primary key. A duplicate
-- copy (made before 0009) never replaces the first copy's mark.
CREATE FUNCTION operations_mark_redriven() RETURNS trigger LANGUAGE plpgsql
SET jit = off AS $$
BEGIN
    UPDATE operations
    SET redriven_as = NEW.id, updated_at = greatest(updated_at, NEW.created_at)
    WHERE id = NEW.redrive_of AND redriven_as IS NULL;
    RETURN NULL;
END
$$;

CREATE TRIGGER operations_mark_redriven AFTER INSERT ON operations
    FOR EACH ROW WHEN (NEW.redrive_of IS NOT NULL AND NOT NEW.redrive_duplicate)
    EXECUTE FUNCTION operations_mark_redriven();

-- The originals re-driven before this migration: marked with their (first) copy. The count
-- trigger moves them from dead to dead re-driven.
UPDATE operations p
SET redriven_as = c.id, updated_at = greatest(p.updated_at, c.created_at)
FROM operations c
WHERE c.redrive_of = p.id AND c.redrive_of IS NOT NULL AND NOT c.redrive_duplicate
  AND p.redriven_as IS NULL;
