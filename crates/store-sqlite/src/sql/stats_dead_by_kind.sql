-- Dead operations awaiting action (not re-driven as new) by kind. Reads the trigger-kept counts
-- (operation_counts).
SELECT kind AS k, sum(operations) AS n FROM operation_counts
WHERE status = 'dead' AND redriven = 0
GROUP BY kind
HAVING sum(operations) <> 0
