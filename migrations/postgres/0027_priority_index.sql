-- no-transaction
-- The claim walks each priority's eligible range in order (claim_eligible.sql): pending rows
-- by (priority, next_eligible_at, id), so that a claim reads only the eligible rows of each
-- level, never the not-yet-eligible ones of a higher level.
--
-- Rolling deploy: safe while workers run: built concurrently (writes go on), alone in its file.
-- The previous release does not use it.
CREATE INDEX CONCURRENTLY IF NOT EXISTS operations_pending_priority
    ON operations (priority, next_eligible_at, id) WHERE status = 'pending';
