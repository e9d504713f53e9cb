-- Attempts that ended in the minute of ?1 or after (snoozes, which gave their attempt back, left
-- out), by the dependency of their operation ('none' for kinds without one). Reads the
-- trigger-kept per-minute counts (attempt_minutes, through its primary key), where no dependency
-- is '': a day of minutes at most, whatever the attempt rate.
SELECT coalesce(nullif(dependency, ''), 'none') AS k, sum(attempts - snoozed) AS n
FROM attempt_minutes
WHERE minute >= substr(?1, 1, 16)
GROUP BY 1
HAVING sum(attempts - snoozed) <> 0
