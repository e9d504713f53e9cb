-- Dead operations counted by kind. Reads the trigger-kept counts (operation_counts).
SELECT kind, sum(operations)::int8 FROM operation_counts
WHERE status = 'dead'
GROUP BY kind
HAVING sum(operations) <> 0
