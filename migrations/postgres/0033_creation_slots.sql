-- Rolling deploy: safe while workers run: yes; creating the trigger takes the write lock on
-- operations until the migration commits, while every operation's id is read once by creation
-- slot (about a second per million rows), so that writers wait that long and no insert is
-- missed. The previous release's workers keep working: the trigger records their inserts too;
-- its listings do not read the table.
--
-- The ids of the operations created in each five-minute slot (backlog_slot(), 0020): the
-- smallest and the largest, kept by a statement trigger on every insert (enqueue, re-drive as
-- new, restore, import), so that a listing narrowed by creation time walks the primary key
-- between the ids of the slots the range touches instead of every row (ids are UUID v7, but
-- their time is the producer's clock and created_at the time the producer passed, so the two
-- are not promised to agree: the bounds are what was inserted, never inferred). A range no
-- slot touches reads nothing. Ids and creation times never change, so updates write nothing
-- here; a removal leaves the bounds wide (still true bounds); the maintenance leader folds the
-- shards of settled slots into one row and removes the oldest slots that no operation is left
-- in.
--
-- Sharded by backend (16 shards) as backlog_slots, so that concurrent enqueuers update
-- different rows.
CREATE TABLE creation_slots (
    slot      timestamptz NOT NULL
              CHECK (slot = date_trunc('hour', slot)
                            + floor(extract(minute FROM slot) / 5) * interval '5 minutes'),
    shard     smallint    NOT NULL CHECK (shard BETWEEN 0 AND 15),
    first_id  uuid        NOT NULL,
    last_id   uuid        NOT NULL CHECK (first_id <= last_id),
    PRIMARY KEY (slot, shard)
);

CREATE FUNCTION creation_slots_insert() RETURNS trigger LANGUAGE plpgsql
SET jit = off AS $$
BEGIN
    INSERT INTO creation_slots AS s (slot, shard, first_id, last_id)
    -- (uuid has no min() before PostgreSQL 16; its text in the C collation orders as it does.)
    SELECT backlog_slot(created_at), pg_backend_pid() % 16,
           min(id::text COLLATE "C")::uuid, max(id::text COLLATE "C")::uuid
    FROM new_rows
    GROUP BY 1
    ORDER BY 1
    ON CONFLICT (slot, shard) DO UPDATE
    SET first_id = least(s.first_id, excluded.first_id),
        last_id = greatest(s.last_id, excluded.last_id)
    -- An insert inside the bounds (the usual one, at the end of a slot already wider) changes
    -- nothing and writes no row version.
    WHERE excluded.first_id < s.first_id OR excluded.last_id > s.last_id;
    RETURN NULL;
END
$$;

-- Pinned to this schema, as 0019 pins the other triggers' functions.
DO $$
BEGIN
    EXECUTE format('ALTER FUNCTION creation_slots_insert() SET search_path = %s',
                   (SELECT p.pronamespace::regnamespace::text FROM pg_proc p
                    WHERE p.oid = 'creation_slots_insert()'::regprocedure));
END
$$;

-- Writers wait from here to the end of the migration: the bounds below and the trigger see the
-- same rows.
LOCK TABLE operations IN SHARE ROW EXCLUSIVE MODE;

CREATE TRIGGER operations_creation_slots AFTER INSERT ON operations
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION creation_slots_insert();

INSERT INTO creation_slots (slot, shard, first_id, last_id)
SELECT backlog_slot(created_at), 0, min(id::text COLLATE "C")::uuid, max(id::text COLLATE "C")::uuid
FROM operations
GROUP BY 1;
