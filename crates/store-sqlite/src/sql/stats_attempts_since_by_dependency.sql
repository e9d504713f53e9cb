-- Attempts that ended at or after ?1 (snoozes, which gave their attempt back, left out), by the
-- dependency of their operation ('none' for kinds without one). Walks operation_attempts_ended.
SELECT coalesce(o.dependency, 'none') AS k, count(*) AS n
FROM operation_attempts AS a
JOIN operations AS o ON o.id = a.operation_id
WHERE a.ended_at >= ?1 AND a.outcome <> 'snoozed'
GROUP BY 1
