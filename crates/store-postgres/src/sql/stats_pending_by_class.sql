-- Pending operations counted by last failure class (NULL: they have not failed). Reads
-- operations_status_kind (status, kind, id) for the pending rows.
SELECT last_failure_class, count(*) FROM operations
WHERE status = 'pending'
GROUP BY last_failure_class
