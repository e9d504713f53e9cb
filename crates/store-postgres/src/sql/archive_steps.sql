-- The durable steps of a batch of archived operations ($1 uuid[]), by name. Walks the primary key
-- (operation_id, name).
SELECT operation_id, name, output, attempt, completed_at
FROM operation_steps
WHERE operation_id = ANY($1)
ORDER BY operation_id, name
