-- Removes the per-minute counts of promotions to dead of the minutes before ?1 (walks the primary
-- key of dead_minutes from its start).
DELETE FROM dead_minutes WHERE minute < ?1
