-- Records a 'held' alert at ?1 (now) for each attempt that failed for configuration and ended
-- at or after ?2, not recorded yet; at most ?3, oldest first. Walks
-- operation_attempts_configuration from ?2, so a pass reads only the holds since the last one.
-- Returns the rows recorded.
INSERT INTO alerts (event, subject, operation_id, kind, dependency, summary, next_action,
                    source_at, status, tries, due_at, created_at)
SELECT 'held', 'held:' || a.operation_id || ':' || a.attempt, a.operation_id, o.kind,
       coalesce(a.error ->> 'dependency', o.dependency),
       coalesce(a.error ->> 'summary', 'configuration failure'),
       a.error ->> 'next_action', a.ended_at, 'pending', 0, ?1, ?1
FROM operation_attempts a INDEXED BY operation_attempts_configuration
JOIN operations o ON o.id = a.operation_id
WHERE a.failure_class = 'configuration' AND a.ended_at >= ?2
  AND NOT EXISTS (SELECT 1 FROM alerts x
                  WHERE x.subject = 'held:' || a.operation_id || ':' || a.attempt)
ORDER BY a.ended_at, a.id
LIMIT ?3
ON CONFLICT (subject) DO NOTHING
RETURNING *
