-- The durable steps of a batch of archived operations (?1, a JSON array of ids), by name. Walks
-- the primary key (operation_id, name).
SELECT operation_id, name, output, attempt, completed_at
FROM operation_steps
WHERE operation_id IN (SELECT value FROM json_each(?1))
ORDER BY operation_id, name
