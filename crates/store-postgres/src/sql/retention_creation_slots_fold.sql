-- Folds the shards of the creation slots (migration 0033) that started before $1 into shard 0 of
-- their slot, their bounds widened to cover them all. Locked in (slot, shard) order, the order
-- in which the trigger upserts them, as the backlog's fold (retention_backlog_slots_fold.sql).
-- Returns how many rows were folded.
WITH moved AS (
    DELETE FROM creation_slots
    WHERE (slot, shard) IN (SELECT slot, shard FROM creation_slots
                            WHERE slot < $1 AND shard <> 0
                            ORDER BY slot, shard
                            FOR UPDATE)
    RETURNING slot, first_id, last_id
), folded AS (
    INSERT INTO creation_slots AS s (slot, shard, first_id, last_id)
    SELECT slot, 0, min(first_id::text COLLATE "C")::uuid, max(last_id::text COLLATE "C")::uuid
    FROM moved
    GROUP BY slot
    ORDER BY slot
    ON CONFLICT (slot, shard) DO UPDATE
    SET first_id = least(s.first_id, excluded.first_id),
        last_id = greatest(s.last_id, excluded.last_id)
)
SELECT count(*)::int8 FROM moved
