-- Operations by status; a dead operation re-driven as new is left out (its copy carries the work
-- on; stats_dead_redriven_by_kind.sql counts it). Reads the trigger-kept counts
-- (operation_counts), never the operations table.
SELECT status AS k, sum(operations) AS n FROM operation_counts
WHERE NOT (status = 'dead' AND redriven = 1)
GROUP BY status
HAVING sum(operations) <> 0
