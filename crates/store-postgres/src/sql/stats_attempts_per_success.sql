-- The attempts of succeeded operations (the sum of their `attempt`: snoozes refund theirs, and a
-- re-drive in place starts again from zero), and how many operations succeeded: their ratio is
-- the attempts per completed effect. Reads the trigger-kept counts (operation_counts).
SELECT coalesce(sum(attempts), 0)::int8 AS attempts,
       coalesce(sum(operations), 0)::int8 AS successes
FROM operation_counts
WHERE status = 'succeeded'
