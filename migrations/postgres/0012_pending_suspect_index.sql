-- no-transaction
-- The suspects' claim and the workers' probe walk only waiting suspects (usually none), so the
-- ordinary claim keeps its index and plan.
--
-- Rolling deploy: safe while workers run: built concurrently (writes go on), alone in its file.
-- The previous release does not use it.
CREATE INDEX CONCURRENTLY IF NOT EXISTS operations_pending_suspect
    ON operations (next_eligible_at, id) WHERE status = 'pending' AND suspect;
