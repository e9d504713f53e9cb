-- Counts of operations per (kind, status, last failure class), kept by triggers in the same
-- statements that change them, so that `oprec stats` and the metrics gauges read a few hundred
-- rows instead of counting the table (0.8 s at 1 M rows, and growing with it).
--
-- Statement-level triggers with transition tables fold a whole batch (an enqueue of 1,000, a
-- completion batch) into one upsert per group; rows are sharded by backend (16 shards), so
-- concurrent writers of the same kind and status update different rows instead of queueing on
-- one. `attempts` sums the `attempt` column, which gives attempts per success without joining
-- operation_attempts. A shard may go negative (counted in by one backend, out by another):
-- only the sums over shards mean anything.
--
-- Rolling deploy: safe while workers run: they keep working, but writers to `operations` wait for one count of
-- the table while the triggers are installed (a moment on a small table, seconds or more at 10 M
-- rows), so that no change is counted twice or missed: run it at a quiet time. The previous
-- version's workers keep working against this schema: the triggers count their writes.
CREATE TABLE operation_counts (
    kind           text     NOT NULL,
    status         text     NOT NULL CHECK (status IN
                       ('pending', 'running', 'reconciling', 'held', 'succeeded', 'dead', 'cancelled')),
    -- '' when the operation has not failed (a primary key cannot hold NULL).
    failure_class  text     NOT NULL CHECK (failure_class IN
                       ('', 'transient', 'rate_limited', 'backpressure', 'permanent', 'configuration', 'unknown')),
    shard          smallint NOT NULL CHECK (shard BETWEEN 0 AND 15),
    operations     bigint   NOT NULL,
    attempts       bigint   NOT NULL,
    PRIMARY KEY (kind, status, failure_class, shard)
);

CREATE FUNCTION operation_counts_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO operation_counts AS c (kind, status, failure_class, shard, operations, attempts)
    SELECT kind, status, coalesce(last_failure_class, ''), pg_backend_pid() % 16,
           count(*), coalesce(sum(attempt), 0)
    FROM new_rows
    GROUP BY 1, 2, 3
    ORDER BY 1, 2, 3
    ON CONFLICT (kind, status, failure_class, shard) DO UPDATE
    SET operations = c.operations + excluded.operations, attempts = c.attempts + excluded.attempts;
    RETURN NULL;
END
$$;

CREATE FUNCTION operation_counts_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- Old rows counted out, new rows counted in; groups that net to nothing (a heartbeat, a
    -- wake-up mark) write nothing.
    INSERT INTO operation_counts AS c (kind, status, failure_class, shard, operations, attempts)
    SELECT kind, status, failure_class, pg_backend_pid() % 16, sum(n), sum(a)
    FROM (SELECT kind, status, coalesce(last_failure_class, '') AS failure_class,
                 -1 AS n, -attempt::int8 AS a
          FROM old_rows
          UNION ALL
          SELECT kind, status, coalesce(last_failure_class, ''), 1, attempt::int8
          FROM new_rows) AS d
    GROUP BY 1, 2, 3
    HAVING sum(n) <> 0 OR sum(a) <> 0
    ORDER BY 1, 2, 3
    ON CONFLICT (kind, status, failure_class, shard) DO UPDATE
    SET operations = c.operations + excluded.operations, attempts = c.attempts + excluded.attempts;
    RETURN NULL;
END
$$;

CREATE FUNCTION operation_counts_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO operation_counts AS c (kind, status, failure_class, shard, operations, attempts)
    SELECT kind, status, coalesce(last_failure_class, ''), pg_backend_pid() % 16,
           -count(*), -coalesce(sum(attempt), 0)
    FROM old_rows
    GROUP BY 1, 2, 3
    ORDER BY 1, 2, 3
    ON CONFLICT (kind, status, failure_class, shard) DO UPDATE
    SET operations = c.operations + excluded.operations, attempts = c.attempts + excluded.attempts;
    RETURN NULL;
END
$$;

CREATE FUNCTION operation_counts_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM operation_counts;
    RETURN NULL;
END
$$;

-- Writers wait from here to the end of the migration: the count below and the triggers see the
-- same rows.
LOCK TABLE operations IN SHARE ROW EXCLUSIVE MODE;

CREATE TRIGGER operations_count_insert AFTER INSERT ON operations
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION operation_counts_insert();

CREATE TRIGGER operations_count_update AFTER UPDATE ON operations
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION operation_counts_update();

CREATE TRIGGER operations_count_delete AFTER DELETE ON operations
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION operation_counts_delete();

CREATE TRIGGER operations_count_truncate AFTER TRUNCATE ON operations
    FOR EACH STATEMENT EXECUTE FUNCTION operation_counts_truncate();

INSERT INTO operation_counts (kind, status, failure_class, shard, operations, attempts)
SELECT kind, status, coalesce(last_failure_class, ''), 0, count(*), coalesce(sum(attempt), 0)
FROM operations
GROUP BY 1, 2, 3;
