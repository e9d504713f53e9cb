-- Rolling deploy: safe while workers run: yes; creating the trigger takes the write lock on
-- operations until the migration commits, while every operation's id is read once by creation
-- slot (1-3 s per million rows here), so that writers wait that long and no insert is missed.
-- The previous release's workers keep working: the trigger records their inserts too; its
-- listings do not read the table.
--
-- Where the ids of the operations created in each five-minute slot (backlog_slot(), 0020) lie:
-- a range that holds every one of them, so that a listing narrowed by creation time walks the
-- primary key between the bounds of the slots the range touches instead of every row, and a
-- range that touches no slot reads nothing. Ids are UUID v7, whose first 48 bits are the
-- producer's clock in milliseconds, but created_at is the time the producer passed (a restore
-- keeps an old id, a clock can be off): the two are not promised to agree, so a slot's range is
-- the ids of its own five minutes widened by every id inserted that falls outside them. The
-- usual insert falls inside and writes nothing here: the trigger compares its ids with the
-- slot's row (one primary-key look per insert statement); the first insert of a slot, and an
-- id from elsewhere, write it. Ids and creation times never change, so updates touch nothing; a
-- removal leaves the range wide (still true); the maintenance leader removes the oldest slots
-- that no operation is left in.
CREATE TABLE creation_slots (
    slot      timestamptz PRIMARY KEY
              CHECK (slot = date_trunc('hour', slot)
                            + floor(extract(minute FROM slot) / 5) * interval '5 minutes'),
    first_id  uuid        NOT NULL,
    last_id   uuid        NOT NULL CHECK (first_id <= last_id)
);

-- The smallest and the largest UUID v7 of the five minutes from `slot` (their time prefix, the
-- rest of the bits all 0 or all 1), clamped to the 48 bits of the prefix.
CREATE FUNCTION creation_slot_first_id(slot timestamptz) RETURNS uuid LANGUAGE sql IMMUTABLE
PARALLEL SAFE AS $$
    SELECT (lpad(to_hex(least(greatest(floor(extract(epoch FROM slot) * 1000), 0),
                              281474976710655)::int8), 12, '0')
            || '00000000000000000000')::uuid
$$;

CREATE FUNCTION creation_slot_last_id(slot timestamptz) RETURNS uuid LANGUAGE sql IMMUTABLE
PARALLEL SAFE AS $$
    SELECT (lpad(to_hex(least(greatest(floor(extract(epoch FROM slot) * 1000) + 299999, 0),
                              281474976710655)::int8), 12, '0')
            || 'ffffffffffffffffffff')::uuid
$$;

CREATE FUNCTION creation_slots_insert() RETURNS trigger LANGUAGE plpgsql
SET jit = off AS $$
DECLARE
    first_at  timestamptz;
    last_at   timestamptz;
    known     creation_slots%ROWTYPE;
BEGIN
    -- The usual statement: every row created in one slot whose range already holds their ids.
    -- Checked with comparisons only, and nothing is written.
    SELECT min(created_at), max(created_at) INTO first_at, last_at FROM new_rows;
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

-- Pinned to this schema, as 0019 pins the other triggers' functions.
DO $$
DECLARE
    f regprocedure;
BEGIN
    FOREACH f IN ARRAY ARRAY[
        'creation_slot_first_id(timestamptz)', 'creation_slot_last_id(timestamptz)',
        'creation_slots_insert()'
    ]::regprocedure[] LOOP
        EXECUTE format('ALTER FUNCTION %s SET search_path = %s', f,
                       (SELECT p.pronamespace::regnamespace FROM pg_proc p WHERE p.oid = f));
    END LOOP;
END
$$;

-- Writers wait from here to the end of the migration: the ranges below and the trigger see the
-- same rows.
LOCK TABLE operations IN SHARE ROW EXCLUSIVE MODE;

CREATE TRIGGER operations_creation_slots AFTER INSERT ON operations
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION creation_slots_insert();

INSERT INTO creation_slots (slot, first_id, last_id)
SELECT slot, least(first_id, creation_slot_first_id(slot)),
       greatest(last_id, creation_slot_last_id(slot))
FROM (SELECT backlog_slot(created_at) AS slot,
             min(id::text COLLATE "C")::uuid AS first_id,
             max(id::text COLLATE "C")::uuid AS last_id
      FROM operations
      GROUP BY 1) AS n;
