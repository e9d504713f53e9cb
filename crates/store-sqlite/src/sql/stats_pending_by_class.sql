-- Pending operations by last failure class (NULL: they have not failed). Walks
-- operations_status_kind for status 'pending'.
SELECT last_failure_class AS k, count(*) AS n
FROM operations
WHERE status = 'pending'
GROUP BY last_failure_class
