-- Operations counted by status, kind and last failure class (NULL: not failed; last in each
-- kind). Reads the trigger-kept counts (operation_counts), never the operations table.
SELECT status, kind, nullif(failure_class, '') AS last_failure_class,
       sum(operations)::int8 AS count
FROM operation_counts
GROUP BY status, kind, failure_class
HAVING sum(operations) <> 0
ORDER BY status, kind, nullif(failure_class, '')
