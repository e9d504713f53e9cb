-- Rolling deploy: safe while workers run: yes; creating the trigger takes the write lock on
-- operations until the migration commits, while the last day's deaths are counted (through the
-- dead rows of the status index), so completions wait that moment and no death is counted twice
-- or missed. The previous release's workers keep working: the trigger counts their promotions
-- too; its dashboard reads deaths from the operations as before.

-- Promotions to dead per minute and kind, kept by a trigger as they happen, so that the
-- dashboard's deaths-per-minute chart shows what died when even after those operations were
-- re-driven (a re-drive in place turns a dead row pending again, and the chart used to count
-- only rows that are dead now). Like attempt_minutes (0013): history, sharded by backend (16
-- shards) so that concurrent writers update different rows; only sums over shards mean anything;
-- the maintenance leader removes minutes older than two days with attempt_minutes.
CREATE TABLE dead_minutes (
    minute  timestamptz NOT NULL CHECK (minute = date_trunc('minute', minute)),
    kind    text        NOT NULL,
    shard   smallint    NOT NULL CHECK (shard BETWEEN 0 AND 15),
    dead    bigint      NOT NULL,
    PRIMARY KEY (minute, kind, shard)
);

CREATE FUNCTION dead_minutes_insert() RETURNS trigger LANGUAGE plpgsql
SET jit = off AS $$
BEGIN
    INSERT INTO dead_minutes AS m (minute, kind, shard, dead)
    VALUES (date_trunc('minute', coalesce(NEW.terminal_at, now())), NEW.kind,
            pg_backend_pid() % 16, 1)
    ON CONFLICT (minute, kind, shard) DO UPDATE SET dead = m.dead + 1;
    RETURN NULL;
END
$$;

-- Pinned to this schema, as 0019 pins the other triggers' functions: a statement run with
-- another search path still counts here.
-- (regnamespace's text is already quoted where the name needs it, so %s, as 0019 does.)
DO $$
BEGIN
    EXECUTE format('ALTER FUNCTION dead_minutes_insert() SET search_path = %s',
                   (SELECT p.pronamespace::regnamespace::text FROM pg_proc p
                    WHERE p.oid = 'dead_minutes_insert()'::regprocedure));
END
$$;

-- Only a promotion runs the function: the WHEN clause is checked without calling it, so a
-- claim or a completion that does not kill pays one comparison per row.
CREATE TRIGGER operations_dead_minutes AFTER UPDATE OF status ON operations
    FOR EACH ROW WHEN (NEW.status = 'dead' AND OLD.status <> 'dead')
    EXECUTE FUNCTION dead_minutes_insert();

INSERT INTO dead_minutes (minute, kind, shard, dead)
SELECT date_trunc('minute', terminal_at), kind, 0, count(*)
FROM operations
WHERE status = 'dead' AND terminal_at >= now() - interval '1 day'
GROUP BY 1, 2;
