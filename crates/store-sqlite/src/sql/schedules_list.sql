-- Every schedule by kind, with its last operation's status (NULL when retention removed it).
-- Reads the small operation_schedules table whole (bounded at 10,000 rows); each last operation
-- is looked up on its own by the primary key of operations (a correlated lookup, never a join
-- the planner could turn into a scan of operations when its statistics are stale).
SELECT s.kind, s.expression, s.timezone, s.missed, s.grace_secs, s.payload, s.declared_at,
       s.declared_by, s.last_tick, s.last_enqueued_tick, s.last_operation_id, s.next_tick,
       s.updated_at,
       (SELECT o.status FROM operations o WHERE o.id = s.last_operation_id) AS last_operation_status
FROM operation_schedules s
ORDER BY s.kind
LIMIT 10000
