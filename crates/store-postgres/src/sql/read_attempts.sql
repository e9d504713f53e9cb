-- The attempt history of one operation ($1), oldest first. Walks operation_attempts_operation
-- (operation_id, id).
SELECT attempt, claimed_at, ended_at, outcome, failure_class, error, worker_id, code_version,
       isolated, stale_outcome, stale_at
FROM operation_attempts
WHERE operation_id = $1
ORDER BY id
