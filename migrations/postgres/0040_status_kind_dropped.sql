-- no-transaction
-- Rolling deploy: safe while workers run: dropped CONCURRENTLY (writes go on), alone in its file.
-- The previous release's listings by status walked it: without it they read the same rows through
-- 0039's index, operations_finished_kind and operations_running_lease, sorting what they list.
--
-- operations_status_kind (status, kind, id, 0001), replaced by 0039's index of the waiting and
-- dead rows: no index entry of it in a claim or in a completion (BENCHMARKS.md, "Figures,
-- 2026-12-05: fewer index entries per operation").
DROP INDEX CONCURRENTLY IF EXISTS operations_status_kind;
