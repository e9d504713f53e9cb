-- Operations not yet ended (pending, running, reconciling, held) by the five-minute slot of their
-- creation time, summed over shards; core folds the slots into its age buckets. Reads the
-- trigger-kept backlog_slots (about one row per slot of backlog age), never the operations table.
SELECT slot, sum(operations)::int8
FROM backlog_slots
GROUP BY slot
HAVING sum(operations) <> 0
