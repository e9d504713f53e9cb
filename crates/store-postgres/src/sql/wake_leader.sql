-- Takes the scheduler's leadership for this schema until the end of the transaction, if no other
-- session holds it: one scheduler publishes at a time, so several scheduler processes do not
-- multiply wake-ups. A transaction-level advisory lock, no table.
SELECT pg_try_advisory_xact_lock(hashtext(current_schema() || '.oprec.scheduler'))
