-- Rolling deploy: safe while workers run: yes; replaces a function, takes no lock on
-- operations. The previous release's workers keep working: the trigger records their inserts.
--
-- The upkeep removes creation slots (0033) that no operation is left in, once they are older
-- than a day. A restore or an import can insert an operation created then, into a slot the
-- removal is looking at, without writing the slot (its range already holds the id): the
-- removal's snapshot would not see the uncommitted operation. So the two take turns on an
-- advisory lock of this schema's own: the trigger takes it shared for an operation created
-- more than an hour ago (never for new ones), the removal exclusive, each to the end of its
-- transaction.
CREATE FUNCTION creation_slots_lock() RETURNS int8 LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT hashtextextended('oprec.creation_slots.' || current_schema(), 0)
$$;

CREATE OR REPLACE FUNCTION creation_slots_insert() RETURNS trigger LANGUAGE plpgsql
SET jit = off AS $$
DECLARE
    first_at  timestamptz;
    last_at   timestamptz;
    known     creation_slots%ROWTYPE;
BEGIN
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

-- Pinned to this schema, as 0019 pins the other triggers' functions (CREATE OR REPLACE keeps
-- the trigger's function settings only when restated).
DO $$
DECLARE
    f regprocedure;
BEGIN
    FOREACH f IN ARRAY ARRAY['creation_slots_lock()', 'creation_slots_insert()']::regprocedure[] LOOP
        EXECUTE format('ALTER FUNCTION %s SET search_path = %s', f,
                       (SELECT p.pronamespace::regnamespace FROM pg_proc p WHERE p.oid = f));
    END LOOP;
END
$$;
