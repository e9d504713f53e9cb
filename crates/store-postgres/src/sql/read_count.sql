-- Operations counted by status, kind and last failure class. Reads operations_status_kind
-- (status, kind, id), or the whole table when the planner prefers it.
SELECT status, kind, last_failure_class, count(*) AS count
FROM operations
GROUP BY status, kind, last_failure_class
ORDER BY status, kind, last_failure_class
