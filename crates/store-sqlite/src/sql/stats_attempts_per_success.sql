-- The attempts of succeeded operations (the sum of their `attempt`: snoozes refund theirs, and a
-- re-drive in place starts again from zero), and how many succeeded. Reads the trigger-kept
-- counts (operation_counts).
SELECT coalesce(sum(attempts), 0) AS attempts, coalesce(sum(operations), 0) AS successes
FROM operation_counts
WHERE status = 'succeeded'
