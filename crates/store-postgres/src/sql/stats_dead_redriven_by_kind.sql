-- Dead operations re-driven as new (their copy carries the work on) counted by kind. Reads the
-- trigger-kept counts (operation_counts).
SELECT kind, sum(operations)::int8 FROM operation_counts
WHERE status = 'dead' AND redriven
GROUP BY kind
HAVING sum(operations) <> 0
