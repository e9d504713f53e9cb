-- Marks the pending operations a control of value ?1 covers (its column holds
-- the value, or for a dependency its last failure named it) as never woken, so that the scheduler
-- wakes them on its first pass once nothing holds them back: a control set or lifted on them
-- makes the wake-ups sent before useless (dropped while it holds, or spent before it lifted).
-- Reads the pending rows (the partial index operations_pending_eligible).
UPDATE operations SET last_woken_at = NULL
WHERE status = 'pending' AND last_woken_at IS NOT NULL AND /*scope_matches*/
