-- When the oldest operation not yet ended was created. Walks operations_status_kind for the four
-- waiting statuses.
SELECT min(created_at) AS oldest
FROM operations
WHERE status IN ('pending', 'running', 'reconciling', 'held')
