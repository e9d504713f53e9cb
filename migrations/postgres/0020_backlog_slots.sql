-- Rolling deploy: safe while workers run: they keep working, but writers to operations wait
-- while the operations not yet ended are counted once into the new table (a moment at hundreds of
-- thousands of waiting rows, under a second at a million), so that none is counted twice or
-- missed. The previous release's workers keep working against this schema: the triggers count
-- their writes; its `stats` reads the waiting rows as before.
--
-- Operations not yet ended (pending, running, reconciling, held), counted by the five-minute slot
-- of their creation time, kept by triggers in the statements that enqueue, end, re-drive,
-- restore or remove them, so that `oprec stats`' "backlog by age" and the oprec_backlog gauge read
-- a few rows per slot of backlog instead of every waiting row (at 300,000 waiting, 0.35-0.7 s,
-- every metrics refresh of every worker serving metrics). Claims, heartbeats and retries move an
-- operation between waiting statuses and write nothing here.
--
-- Rows are sharded by backend (16 shards) so that concurrent enqueuers and completers update
-- different rows; only the sums over shards mean anything. The maintenance leader folds the
-- shards of slots older than an hour into shard 0 and removes the slots that count nothing, so
-- the table holds about one row per five minutes of backlog age.
CREATE TABLE backlog_slots (
    slot        timestamptz NOT NULL
                CHECK (slot = date_trunc('hour', slot)
                              + floor(extract(minute FROM slot) / 5) * interval '5 minutes'),
    shard       smallint    NOT NULL CHECK (shard BETWEEN 0 AND 15),
    operations  bigint      NOT NULL,
    PRIMARY KEY (slot, shard)
);

-- The slot of a creation time: the start of its five minutes.
CREATE FUNCTION backlog_slot(at timestamptz) RETURNS timestamptz LANGUAGE sql IMMUTABLE
PARALLEL SAFE AS $$
    SELECT date_trunc('hour', at) + floor(extract(minute FROM at) / 5) * interval '5 minutes'
$$;

CREATE FUNCTION backlog_slots_insert() RETURNS trigger LANGUAGE plpgsql
SET jit = off AS $$
BEGIN
    INSERT INTO backlog_slots AS b (slot, shard, operations)
    SELECT backlog_slot(created_at), pg_backend_pid() % 16, count(*)
    FROM new_rows
    WHERE status IN ('pending', 'running', 'reconciling', 'held')
    GROUP BY 1
    ORDER BY 1
    ON CONFLICT (slot, shard) DO UPDATE SET operations = b.operations + excluded.operations;
    RETURN NULL;
END
$$;

CREATE FUNCTION backlog_slots_update() RETURNS trigger LANGUAGE plpgsql
SET jit = off AS $$
BEGIN
    -- Rows that stay waiting (a claim, a heartbeat, a retry) or stay ended net to nothing and
    -- write nothing.
    INSERT INTO backlog_slots AS b (slot, shard, operations)
    SELECT slot, pg_backend_pid() % 16, sum(n)
    FROM (SELECT backlog_slot(created_at) AS slot, -1 AS n
          FROM old_rows
          WHERE status IN ('pending', 'running', 'reconciling', 'held')
          UNION ALL
          SELECT backlog_slot(created_at), 1
          FROM new_rows
          WHERE status IN ('pending', 'running', 'reconciling', 'held')) AS d
    GROUP BY 1
    HAVING sum(n) <> 0
    ORDER BY 1
    ON CONFLICT (slot, shard) DO UPDATE SET operations = b.operations + excluded.operations;
    RETURN NULL;
END
$$;

CREATE FUNCTION backlog_slots_delete() RETURNS trigger LANGUAGE plpgsql
SET jit = off AS $$
BEGIN
    INSERT INTO backlog_slots AS b (slot, shard, operations)
    SELECT backlog_slot(created_at), pg_backend_pid() % 16, -count(*)
    FROM old_rows
    WHERE status IN ('pending', 'running', 'reconciling', 'held')
    GROUP BY 1
    ORDER BY 1
    ON CONFLICT (slot, shard) DO UPDATE SET operations = b.operations + excluded.operations;
    RETURN NULL;
END
$$;

CREATE FUNCTION backlog_slots_truncate() RETURNS trigger LANGUAGE plpgsql
SET jit = off AS $$
BEGIN
    DELETE FROM backlog_slots;
    RETURN NULL;
END
$$;

-- Each function finds its tables in the schema it lives in, whatever the search path of the
-- session whose statement fires it (as 0019 pinned the others).
DO $$
DECLARE
    f regprocedure;
BEGIN
    FOREACH f IN ARRAY ARRAY[
        'backlog_slots_insert()', 'backlog_slots_update()', 'backlog_slots_delete()',
        'backlog_slots_truncate()'
    ]::regprocedure[] LOOP
        EXECUTE format('ALTER FUNCTION %s SET search_path = %s', f,
                       (SELECT p.pronamespace::regnamespace FROM pg_proc p WHERE p.oid = f));
    END LOOP;
END
$$;

-- Writers wait from here to the end of the migration: the count below and the triggers see the
-- same rows.
LOCK TABLE operations IN SHARE ROW EXCLUSIVE MODE;

CREATE TRIGGER operations_backlog_insert AFTER INSERT ON operations
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION backlog_slots_insert();

CREATE TRIGGER operations_backlog_update AFTER UPDATE ON operations
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION backlog_slots_update();

CREATE TRIGGER operations_backlog_delete AFTER DELETE ON operations
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION backlog_slots_delete();

CREATE TRIGGER operations_backlog_truncate AFTER TRUNCATE ON operations
    FOR EACH STATEMENT EXECUTE FUNCTION backlog_slots_truncate();

-- Counted from the partial indexes of the waiting statuses' rows only.
INSERT INTO backlog_slots (slot, shard, operations)
SELECT backlog_slot(created_at), 0, count(*)
FROM operations
WHERE status IN ('pending', 'running', 'reconciling', 'held')
GROUP BY 1;
