-- Removes the schedules of kinds (?1: a JSON array) a worker runs without one (their schedule
-- was taken out of the declaration). Walks the primary key of operation_schedules.
DELETE FROM operation_schedules WHERE kind IN (SELECT value FROM json_each(?1))
