-- Folds the shards of the creation slots that started before $1 into shard 0 of their slot.
-- The rows are locked in (slot, shard) order, the order in which the triggers upsert them, so
-- that a fold and a writer never wait on each other in a cycle. The folded rows and shard 0 are
-- apart: the delete touches shards 1-15, the upsert shard 0. Returns how many rows were folded.
WITH moved AS (
    DELETE FROM backlog_slots
    WHERE (slot, shard) IN (SELECT slot, shard FROM backlog_slots
                            WHERE slot < $1 AND shard <> 0
                            ORDER BY slot, shard
                            FOR UPDATE)
    RETURNING slot, operations
), folded AS (
    INSERT INTO backlog_slots AS b (slot, shard, operations)
    SELECT slot, 0, sum(operations) FROM moved
    GROUP BY slot
    ORDER BY slot
    ON CONFLICT (slot, shard) DO UPDATE SET operations = b.operations + excluded.operations
)
SELECT count(*)::int8 FROM moved
