-- Operations counted by status; a dead operation re-driven as new is left out (its copy carries
-- the work on; stats_dead_redriven_by_kind.sql counts it). Reads the trigger-kept counts
-- (operation_counts, a few hundred rows), never the operations table.
SELECT status, sum(operations)::int8 FROM operation_counts
WHERE NOT (status = 'dead' AND redriven)
GROUP BY status
HAVING sum(operations) <> 0
