-- no-transaction
-- Rolling deploy: safe while workers run: built CONCURRENTLY (writes go on), alone in its file.
-- The previous release does not use it.
--
-- The operations that carry a last error, by id: a listing filtered by error text (the
-- dashboard's and `oprec ops list --error`) walks these in id order instead of every row, so
-- that text no operation has costs a read of the failed ones, not of the table (at 1,000,000
-- operations never analyzed, 92% of them never failed: ~200 ms before). A partial index: an
-- operation that never failed adds no entry, so a drain of successes writes nothing here.
CREATE INDEX CONCURRENTLY IF NOT EXISTS operations_errored
    ON operations (id) WHERE last_error IS NOT NULL;
