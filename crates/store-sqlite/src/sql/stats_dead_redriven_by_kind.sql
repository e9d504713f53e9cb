-- Dead operations re-driven as new (their copy carries the work on) by kind. Reads the
-- trigger-kept counts (operation_counts).
SELECT kind AS k, sum(operations) AS n FROM operation_counts
WHERE status = 'dead' AND redriven = 1
GROUP BY kind
HAVING sum(operations) <> 0
