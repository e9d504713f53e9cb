-- Removes the creation slots that started before ?1 and count nothing: every operation created in
-- them has ended.
DELETE FROM backlog_slots WHERE slot < ?1 AND operations = 0
