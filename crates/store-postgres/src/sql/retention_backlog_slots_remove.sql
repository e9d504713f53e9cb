-- Removes the folded creation slots (started before $1) that count nothing: every operation
-- created in them has ended.
DELETE FROM backlog_slots WHERE slot < $1 AND shard = 0 AND operations = 0
