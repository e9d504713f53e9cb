-- Operations by status. Reads the trigger-kept counts (operation_counts), never the operations
-- table.
SELECT status AS k, sum(operations) AS n FROM operation_counts
GROUP BY status
HAVING sum(operations) <> 0
