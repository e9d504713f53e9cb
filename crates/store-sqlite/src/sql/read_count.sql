-- Operations counted by status, kind and last failure class, missing classes last (PostgreSQL's
-- order for an ascending sort). Reads the trigger-kept counts (operation_counts).
SELECT status, kind, nullif(failure_class, '') AS last_failure_class, sum(operations) AS n
FROM operation_counts
GROUP BY status, kind, failure_class
HAVING sum(operations) <> 0
ORDER BY status, kind, nullif(failure_class, '') NULLS LAST
