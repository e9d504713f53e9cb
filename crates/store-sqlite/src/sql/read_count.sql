-- Operations counted by status, kind and last failure class, missing classes last (PostgreSQL's
-- order for an ascending sort), with how many of each group are dead operations re-driven as new.
-- Reads the trigger-kept counts (operation_counts).
SELECT status, kind, nullif(failure_class, '') AS last_failure_class, sum(operations) AS n,
       sum(CASE WHEN redriven = 1 THEN operations ELSE 0 END) AS redriven
FROM operation_counts
GROUP BY status, kind, failure_class
HAVING sum(operations) <> 0
ORDER BY status, kind, nullif(failure_class, '') NULLS LAST
