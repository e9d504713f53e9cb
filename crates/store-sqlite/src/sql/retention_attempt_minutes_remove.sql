-- Removes the per-minute attempt counts of the minutes before ?1 (walks the primary key of
-- attempt_minutes from its start); retention_dead_minutes_remove.sql does the same for deaths.
DELETE FROM attempt_minutes WHERE minute < ?1
