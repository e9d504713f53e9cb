-- Vacuums (and analyzes) the tables whose rows retention removes or every attempt rewrites, in
-- this order (retention.rs names them alike). Runs outside any transaction; takes no lock that
-- stops readers or writers.
VACUUM (ANALYZE) operations, operation_attempts, operation_steps, operation_counts, attempt_minutes, backlog_slots, creation_slots
