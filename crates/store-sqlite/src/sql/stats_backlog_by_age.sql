-- Operations not yet ended (pending, running, reconciling, held) by the five-minute slot of their
-- creation time; core folds the slots into its age buckets. Reads the trigger-kept backlog_slots
-- (one row per slot of backlog age), never the operations table.
SELECT slot AS k, operations AS n
FROM backlog_slots
WHERE operations <> 0
