-- Rolling deploy: safe while workers run: yes. It waits for the writes of operations in progress
-- and holds new ones back until it commits, a moment (catalog changes only: no scan, no row
-- rewritten). The previous release keeps working against this schema: its triggers are the
-- database's, and they write the same rows.
--
-- The CHECK constraints of the three bookkeeping tables, which only the triggers of operations
-- (0038) and the maintenance leader's retention write: operation_counts' status and
-- failure_class lists and shard range (0006), backlog_slots' slot and shard (0020),
-- creation_slots' slot and range (0033). Every value they checked is computed by the statement
-- that writes it:
-- - a status or failure class is copied from a row of operations, whose own CHECKs hold it;
-- - a shard is pg_backend_pid() % 16, or the fold's 0;
-- - a slot is backlog_slot() of a creation time, or one already in the table;
-- - a range is least() and greatest() of ids.
-- So a check could never fail. Yet PostgreSQL reads a table's CHECK constraints from their stored
-- form and compiles them in every statement that writes the table: here in every trigger
-- call, whatever its size, with the slot checks' date arithmetic the largest. An insert of
-- eight operations (a round of single enqueues sharing one insert) took 0.36-0.44 ms without
-- them, 0.40-0.46 ms with them. Measured with pgbench, one client, asynchronous commit, four
-- pairs run alternately (BENCHMARKS.md, "Figures, 2026-12-05 (before midnight)").
--
-- The CHECKs of operations stay: they hold the contract's statuses, classes and reasons, whoever
-- writes the row. SQLite keeps its bookkeeping checks (store-sqlite's schema), where a statement
-- does not compile them anew.
LOCK TABLE operations IN SHARE ROW EXCLUSIVE MODE;
ALTER TABLE operation_counts DROP CONSTRAINT IF EXISTS operation_counts_status_check,
                             DROP CONSTRAINT IF EXISTS operation_counts_failure_class_check,
                             DROP CONSTRAINT IF EXISTS operation_counts_shard_check;
ALTER TABLE backlog_slots DROP CONSTRAINT IF EXISTS backlog_slots_slot_check,
                          DROP CONSTRAINT IF EXISTS backlog_slots_shard_check;
ALTER TABLE creation_slots DROP CONSTRAINT IF EXISTS creation_slots_slot_check,
                           DROP CONSTRAINT IF EXISTS creation_slots_check;
