-- Takes back from the per-minute counts (attempt_minutes) what the counting trigger added for the
-- attempts just restored to operation ?1: they were counted when they first ended and kept when
-- the archive removed them.
INSERT INTO attempt_minutes (minute, dependency, attempts, failed, snoozed)
SELECT substr(a.ended_at, 1, 16) || ':00.000000Z', coalesce(o.dependency, ''),
       -count(*),
       -sum(a.outcome IN ('error', 'rejected', 'vanished', 'unknown')),
       -sum(a.outcome = 'snoozed')
FROM operation_attempts AS a
JOIN operations AS o ON o.id = a.operation_id
WHERE a.operation_id = ?1
GROUP BY 1, 2
ON CONFLICT (minute, dependency) DO UPDATE
SET attempts = attempts + excluded.attempts,
    failed = failed + excluded.failed,
    snoozed = snoozed + excluded.snoozed
