-- Dead operations awaiting action (not re-driven as new) counted by kind. Reads the
-- trigger-kept counts (operation_counts).
SELECT kind, sum(operations)::int8 FROM operation_counts
WHERE status = 'dead' AND NOT redriven
GROUP BY kind
HAVING sum(operations) <> 0
