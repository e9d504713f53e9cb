-- Attempts that ended in the minute of $1 or after (snoozes, which gave the attempt back, left
-- out), counted by their operation's dependency ('none' for kinds without one). Reads the
-- trigger-kept per-minute counts (attempt_minutes, through its primary key), where no dependency
-- is '': a day of minutes at most, whatever the attempt rate.
SELECT coalesce(nullif(dependency, ''), 'none'), sum(attempts - snoozed)::int8
FROM attempt_minutes
WHERE minute >= date_trunc('minute', $1::timestamptz)
GROUP BY 1
HAVING sum(attempts - snoozed) <> 0
