-- One operation's attempt history, oldest first. Walks operation_attempts_operation.
SELECT attempt, claimed_at, ended_at, outcome, failure_class, error, worker_id, code_version,
       isolated, stale_outcome, stale_at
FROM operation_attempts
WHERE operation_id = ?1
ORDER BY id
