-- no-transaction
-- Rolling deploy: safe while workers run: built concurrently (writes go on while it builds), so it runs outside a
-- transaction and holds one statement. At most one copy per parent, whatever re-drives run at
-- once; it also serves "is this operation re-driven already?" by index, whatever the statistics
-- say. If a build is interrupted, PostgreSQL leaves the index INVALID: drop it and migrate again.
CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS operations_redrive_of_once
    ON operations (redrive_of) WHERE redrive_of IS NOT NULL AND NOT redrive_duplicate;
