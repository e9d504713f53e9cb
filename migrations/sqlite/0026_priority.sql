-- Rolling deploy: safe while workers run: adds one column with a constant default (no rewrite)
-- and its index (built under the write lock: writers wait within their busy timeout, a moment
-- per hundred thousand pending rows, as the index holds pending rows only). The previous
-- release's processes name their columns, so their enqueues store the default priority 0 and
-- their claims ignore priorities (oldest eligible first, as before).
--
-- priority: the claim order among eligible operations, a whole number from -2 (claimed last)
-- to 2 (claimed first), 0 by default; given at enqueue (EnqueueOptions::priority, oprec enqueue
-- --priority). An operation eligible for longer than the aging period (core's PRIORITY_AGING,
-- 5 minutes) is claimed before every priority, oldest first (README, "Priorities").
ALTER TABLE operations ADD COLUMN priority INTEGER NOT NULL DEFAULT 0
    CHECK (priority BETWEEN -2 AND 2);

-- The claim walks each priority's eligible range in order (claim_eligible.sql).
CREATE INDEX operations_pending_priority
    ON operations (priority, next_eligible_at, id) WHERE status = 'pending';
