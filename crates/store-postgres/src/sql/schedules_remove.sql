-- Removes the schedules of kinds ($1) a worker runs without one (their schedule was taken out of
-- the declaration). Walks the primary key of operation_schedules.
DELETE FROM operation_schedules WHERE kind = ANY($1::text[])
