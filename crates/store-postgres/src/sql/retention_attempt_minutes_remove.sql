-- Removes the per-minute attempt counts of the minutes before $1 (walks the primary key of
-- attempt_minutes from its start).
DELETE FROM attempt_minutes WHERE minute < $1
