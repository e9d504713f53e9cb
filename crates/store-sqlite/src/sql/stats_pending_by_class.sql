-- Pending operations by last failure class (NULL: they have not failed). Reads the trigger-kept
-- counts (operation_counts), where no class is ''.
SELECT nullif(failure_class, '') AS k, sum(operations) AS n FROM operation_counts
WHERE status = 'pending'
GROUP BY failure_class
HAVING sum(operations) <> 0
