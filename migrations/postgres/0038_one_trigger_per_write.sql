-- Rolling deploy: safe while workers run: yes; replacing the triggers holds the write lock on
-- operations until the migration commits, a moment (catalog changes only: no scan, no row
-- rewritten), so writers wait that moment. The previous release keeps working against this
-- schema: the triggers are the database's, and they keep the same counts, backlog slots and
-- creation slots for its writes as for this release's.
--
-- One statement trigger per insert and one per update of operations, in place of three (counts
-- 0006, backlog slots 0020, creation slots 0033/0034) and two (counts, backlog slots). The
-- counts and the backlog slots are written by one statement (the counts' upsert a CTE of the
-- backlog slots' upsert), so each insert or update runs one trigger function and one executor
-- for both, where it ran one of each per table.
--
-- Why: every statement that writes operations paid each trigger's call (the PL/pgSQL call and
-- an executor started and ended for its statement) whatever its size, so the smallest inserts
-- paid the most for it: the three insert triggers took 0.11-0.14 ms of an insert of one or of
-- eight operations (0.39 → 0.50 ms and 0.52 → 0.66 ms, commit included, pgbench, one client);
-- as one they take 0.02-0.04 ms less (BENCHMARKS.md, "Figures, 2026-12-05"). Single enqueues
-- from concurrent callers share inserts of about that size (group commit).
--
-- The same bookkeeping: each query is the one its trigger ran (0016's counts, 0020's backlog
-- slots with 0035's inlined slot, 0034's creation slots), and rows are locked in the same order
-- as before (the triggers fired in name order: backlog slots, then counts, then creation slots):
-- a statement with a data-modifying CTE that nothing reads runs the CTE after its main query.
-- The delete and truncate triggers stay as they are: they are rare, and are one per table.
CREATE FUNCTION operations_inserted() RETURNS trigger LANGUAGE plpgsql
SET jit = off AS $$
DECLARE
    first_at  timestamptz;
    last_at   timestamptz;
    known     creation_slots%ROWTYPE;
BEGIN
    -- Counts by kind, status, class and re-drive, and the waiting rows by creation slot.
    WITH counted AS (
        INSERT INTO operation_counts AS c (kind, status, failure_class, redriven, shard,
                                           operations, attempts)
        SELECT kind, status, coalesce(last_failure_class, ''), redriven_as IS NOT NULL,
               pg_backend_pid() % 16, count(*), coalesce(sum(attempt), 0)
        FROM new_rows
        GROUP BY 1, 2, 3, 4
        ORDER BY 1, 2, 3, 4
        ON CONFLICT (kind, status, failure_class, redriven, shard) DO UPDATE
        SET operations = c.operations + excluded.operations,
            attempts = c.attempts + excluded.attempts
    )
    INSERT INTO backlog_slots AS b (slot, shard, operations)
    SELECT backlog_slot(created_at), pg_backend_pid() % 16, count(*)
    FROM new_rows
    WHERE status IN ('pending', 'running', 'reconciling', 'held')
    GROUP BY 1
    ORDER BY 1
    ON CONFLICT (slot, shard) DO UPDATE SET operations = b.operations + excluded.operations;

    -- Where the ids created in each slot lie (0033, 0034).
    SELECT min(created_at), max(created_at) INTO first_at, last_at FROM new_rows;
    -- An operation created more than an hour ago (a restore, an import) may land in a slot the
    -- upkeep is about to remove as empty (it removes slots older than a day): the two take
    -- turns on this lock (shared here, exclusive there, both to the end of their
    -- transactions), so that the upkeep sees the operation, or the slot is made again after.
    IF first_at < clock_timestamp() - interval '1 hour' THEN
        PERFORM pg_advisory_xact_lock_shared(creation_slots_lock());
    END IF;
    -- The usual statement: every row created in one slot whose range already holds their ids.
    -- Checked with comparisons only, and nothing is written.
    IF backlog_slot(first_at) = backlog_slot(last_at) THEN
        SELECT * INTO known FROM creation_slots WHERE slot = backlog_slot(first_at);
        IF FOUND AND NOT EXISTS (SELECT 1 FROM new_rows
                                 WHERE id < known.first_id OR id > known.last_id) THEN
            RETURN NULL;
        END IF;
    END IF;
    INSERT INTO creation_slots AS s (slot, first_id, last_id)
    SELECT n.slot, least(n.first_id, creation_slot_first_id(n.slot)),
           greatest(n.last_id, creation_slot_last_id(n.slot))
    -- (uuid has no min() before PostgreSQL 16; its text in the C collation orders as it does.)
    FROM (SELECT backlog_slot(created_at) AS slot,
                 min(id::text COLLATE "C")::uuid AS first_id,
                 max(id::text COLLATE "C")::uuid AS last_id
          FROM new_rows
          GROUP BY 1) AS n
    ORDER BY 1
    ON CONFLICT (slot) DO UPDATE
    SET first_id = least(s.first_id, excluded.first_id),
        last_id = greatest(s.last_id, excluded.last_id)
    WHERE excluded.first_id < s.first_id OR excluded.last_id > s.last_id;
    RETURN NULL;
END
$$;

CREATE FUNCTION operations_updated() RETURNS trigger LANGUAGE plpgsql
SET jit = off AS $$
BEGIN
    -- Old rows counted out, new rows counted in; groups that net to nothing (a heartbeat, a
    -- wake-up mark; for the backlog slots also a claim or a retry, whose rows stay waiting)
    -- write nothing.
    WITH counted AS (
        INSERT INTO operation_counts AS c (kind, status, failure_class, redriven, shard,
                                           operations, attempts)
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
        SET operations = c.operations + excluded.operations,
            attempts = c.attempts + excluded.attempts
    )
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

-- Each function finds its tables in the schema it lives in, whatever the search path of the
-- session whose statement fires it (as 0019 pinned the others).
DO $$
DECLARE
    f regprocedure;
BEGIN
    FOREACH f IN ARRAY ARRAY['operations_inserted()', 'operations_updated()']::regprocedure[] LOOP
        EXECUTE format('ALTER FUNCTION %s SET search_path = %s', f,
                       (SELECT p.pronamespace::regnamespace FROM pg_proc p WHERE p.oid = f));
    END LOOP;
END
$$;

DROP TRIGGER operations_backlog_insert ON operations;
DROP TRIGGER operations_count_insert ON operations;
DROP TRIGGER operations_creation_slots ON operations;
DROP TRIGGER operations_backlog_update ON operations;
DROP TRIGGER operations_count_update ON operations;

CREATE TRIGGER operations_inserted AFTER INSERT ON operations
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION operations_inserted();

CREATE TRIGGER operations_updated AFTER UPDATE ON operations
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION operations_updated();

DROP FUNCTION operation_counts_insert();
DROP FUNCTION operation_counts_update();
DROP FUNCTION backlog_slots_insert();
DROP FUNCTION backlog_slots_update();
DROP FUNCTION creation_slots_insert();
