-- Operations counted by status. Reads the trigger-kept counts (operation_counts, a few hundred
-- rows), never the operations table.
SELECT status, sum(operations)::int8 FROM operation_counts
GROUP BY status
HAVING sum(operations) <> 0
