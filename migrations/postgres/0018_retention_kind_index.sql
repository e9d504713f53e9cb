-- no-transaction
-- Finished operations by status, kind and the time they finished: a retention batch walks one
-- kind's rows in finish order and stops at that kind's cutoff, so it never reads rows younger
-- than their own retention (a kind kept 90 days beside a default of 7 no longer makes every pass
-- of the default rule read all that kind's rows between 7 and 90 days old), and its plan needs no
-- statistics: equality on the first two columns and the order of the third. The kinds present are
-- found by a loose scan of its first two columns. `oprec retention show` reads it per kind too.
--
-- Rolling deploy: safe while workers run: yes. Built concurrently (no lock that blocks writes); the file holds
-- this one statement because PostgreSQL refuses CONCURRENTLY inside a multi-statement string.
-- The previous version's retention keeps walking operations_finished_at, which stays.
-- A build interrupted half-way leaves an invalid index: the next `oprec migrate` drops and builds it again.
CREATE INDEX CONCURRENTLY IF NOT EXISTS operations_finished_kind
    ON operations (status, kind, terminal_at) WHERE status IN ('succeeded', 'cancelled');
