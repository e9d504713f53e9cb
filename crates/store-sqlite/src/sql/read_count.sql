-- Operations counted by status, kind and last failure class, missing classes last (PostgreSQL's
-- order for an ascending sort). Scans operations_status_kind and sorts the groups.
SELECT status, kind, last_failure_class, count(*) AS n
FROM operations
GROUP BY status, kind, last_failure_class
ORDER BY status, kind, last_failure_class NULLS LAST
