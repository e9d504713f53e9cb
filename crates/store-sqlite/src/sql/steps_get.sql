-- One operation's completed durable steps, in the order they completed. Walks the primary key
-- of operation_steps.
SELECT name, output, attempt, completed_at
FROM operation_steps
WHERE operation_id = ?1
ORDER BY completed_at, name
