-- no-transaction
-- Removing an operation makes PostgreSQL check that no re-drive names it (the redrive_of
-- foreign key): without an index that check reads the whole table once per removed row. Few
-- operations are re-drives, so the index holds only those.
--
-- Rolling deploy: safe while workers run: yes. Built concurrently, alone in its file (see 0008). Shared by retention and archive (both remove rows).
CREATE INDEX CONCURRENTLY IF NOT EXISTS operations_redrive_of
    ON operations (redrive_of) WHERE redrive_of IS NOT NULL;
