-- no-transaction
-- Finished operations that retention may remove, by the time they finished: the retention pass
-- walks it oldest first and stops at its cutoff, and `oprec retention show` reads its first row
-- per kind. Dead operations are left out (retention never removes them), so a pile of old dead
-- operations is never walked again and again.
--
-- Rolling deploy: safe while workers run: yes. Built concurrently (no lock that blocks writes); the file holds
-- this one statement because PostgreSQL refuses CONCURRENTLY inside a multi-statement string.
-- A build interrupted half-way leaves an invalid index: drop it and migrate again.
CREATE INDEX CONCURRENTLY IF NOT EXISTS operations_finished_at
    ON operations (terminal_at) WHERE status IN ('succeeded', 'cancelled');
