-- Attempts that ended at or after $1 (snoozes, which gave the attempt back, left out), counted by
-- their operation's dependency ('none' for kinds without one). Walks operation_attempts_ended
-- (ended_at), then the primary key of operations.
SELECT coalesce(o.dependency, 'none'), count(*)
FROM operation_attempts a
JOIN operations o ON o.id = a.operation_id
WHERE a.ended_at >= $1 AND a.outcome <> 'snoozed'
GROUP BY 1
