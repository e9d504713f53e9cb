-- Every schedule by kind, with its last operation's status (NULL when retention removed it).
-- Reads the small operation_schedules table whole (bounded at 10,000 rows), each last operation
-- by the primary key of operations.
SELECT s.kind, s.expression, s.timezone, s.missed, s.grace_secs, s.payload, s.declared_at,
       s.declared_by, s.last_tick, s.last_enqueued_tick, s.last_operation_id, s.next_tick,
       s.updated_at, o.status AS last_operation_status
FROM operation_schedules s
LEFT JOIN operations o ON o.id = s.last_operation_id
ORDER BY s.kind
LIMIT 10000
