-- Records a leader's pass over schedule $2: the latest tick handled ($3), the latest tick
-- enqueued and its operation ($4, $5; NULL: none this pass, the previous ones kept), the next
-- tick ($6), at "now" ($1; NULL: the database's clock). Fenced by the last tick the pass read
-- ($7, NULL for never): a second leader's pass over the same ticks changes nothing. Walks the
-- primary key of operation_schedules.
UPDATE operation_schedules
SET last_tick = $3,
    last_enqueued_tick = coalesce($4, last_enqueued_tick),
    last_operation_id = coalesce($5, last_operation_id),
    next_tick = $6,
    updated_at = coalesce($1::timestamptz, now())
WHERE kind = $2 AND last_tick IS NOT DISTINCT FROM $7::timestamptz
