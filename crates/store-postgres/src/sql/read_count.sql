-- Operations counted by status, kind and last failure class (NULL: not failed; last in each
-- kind), with how many of each group are dead operations re-driven as new. Reads the
-- trigger-kept counts (operation_counts), never the operations table.
SELECT status, kind, nullif(failure_class, '') AS last_failure_class,
       sum(operations)::int8 AS count,
       coalesce(sum(operations) FILTER (WHERE redriven), 0)::int8 AS redriven
FROM operation_counts
GROUP BY status, kind, failure_class
HAVING sum(operations) <> 0
ORDER BY status, kind, nullif(failure_class, '')
