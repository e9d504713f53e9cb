-- Removes the per-minute counts of attempts and of promotions to dead of the minutes before $1
-- (walks each table's primary key from its start); returns how many rows went.
WITH a AS (DELETE FROM attempt_minutes WHERE minute < $1 RETURNING 1),
     d AS (DELETE FROM dead_minutes WHERE minute < $1 RETURNING 1)
SELECT (SELECT count(*) FROM a) + (SELECT count(*) FROM d) AS removed
