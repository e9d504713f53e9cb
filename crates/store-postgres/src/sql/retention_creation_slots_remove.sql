-- Removes, of the 50 oldest creation slots (migration 0033) that started before $1, those whose
-- id range no operation is left in (retention removed them): every operation created in a slot
-- has its id in the slot's range, so none created then is left. One probe of the primary key per
-- slot; an operation inserted later with an old creation time (a restore) makes its slot again.
DELETE FROM creation_slots s
WHERE s.slot IN (SELECT slot FROM creation_slots WHERE slot < $1 ORDER BY slot LIMIT 50)
  AND NOT EXISTS (SELECT 1 FROM operations o WHERE o.id BETWEEN s.first_id AND s.last_id)
