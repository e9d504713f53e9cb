-- Inserts one attempt of a restored operation (?1); called oldest first, so that the new row ids
-- keep the history's order.
INSERT INTO operation_attempts (operation_id, attempt, claimed_at, ended_at, outcome, failure_class,
                                error, worker_id, code_version, isolated, stale_outcome,
                                stale_at)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)
