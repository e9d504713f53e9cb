-- The attempt histories of a batch of archived operations (?1, a JSON array of ids), each oldest
-- first. Walks operation_attempts_operation (operation_id, id).
SELECT operation_id, attempt, claimed_at, ended_at, outcome, failure_class, error, worker_id,
       code_version, isolated, stale_outcome, stale_at
FROM operation_attempts
WHERE operation_id IN (SELECT value FROM json_each(?1))
ORDER BY operation_id, id
