-- Records a 'held' alert at "now" ($1; NULL: the database's clock) for each attempt that failed
-- for configuration and ended at or after the newest hold already recorded less $2 ms (attempts
-- committed late), not recorded yet; at most $3, oldest first. Walks
-- operation_attempts_configuration from that time (alerts_holds gives it), so a pass reads only
-- the holds since the last one. Returns the rows recorded.
WITH now AS (SELECT coalesce($1::timestamptz, now()) AS t),
since AS (
    SELECT coalesce(max(source_at), '-infinity'::timestamptz)
           - $2::int8 * interval '1 millisecond' AS t
    FROM alerts WHERE event = 'held'
),
fresh AS (
    SELECT a.operation_id, a.attempt, a.ended_at, a.error, o.kind,
           coalesce(a.error ->> 'dependency', o.dependency) AS dependency
    FROM operation_attempts a
    JOIN operations o ON o.id = a.operation_id, since
    WHERE a.failure_class = 'configuration' AND a.ended_at >= since.t
      AND NOT EXISTS (SELECT 1 FROM alerts x
                      WHERE x.subject = 'held:' || a.operation_id || ':' || a.attempt)
    ORDER BY a.ended_at, a.id
    LIMIT $3
)
INSERT INTO alerts (event, subject, operation_id, kind, dependency, summary, next_action,
                    source_at, status, tries, due_at, created_at)
SELECT 'held', 'held:' || f.operation_id || ':' || f.attempt, f.operation_id, f.kind,
       f.dependency, coalesce(f.error ->> 'summary', 'configuration failure'),
       f.error ->> 'next_action', f.ended_at, 'pending', 0, now.t, now.t
FROM fresh f, now
ON CONFLICT (subject) DO NOTHING
RETURNING *
