-- Per minute since the minute of $1, oldest first: attempts that ended in it, of those the ones
-- that did not succeed (error, rejected, vanished or unknown), and operations promoted to dead in
-- it; minutes with neither are left out. Attempts come from the trigger-kept per-minute counts
-- (attempt_minutes, through its primary key), deaths from operations_terminal_at (terminal_at, id).
WITH a AS (
    SELECT minute AS m, sum(attempts)::int8 AS attempts, sum(failed)::int8 AS failed
    FROM attempt_minutes
    WHERE minute >= date_trunc('minute', $1::timestamptz)
    GROUP BY 1
    HAVING sum(attempts) <> 0
), d AS (
    SELECT date_trunc('minute', terminal_at) AS m, count(*) AS dead
    FROM operations
    WHERE status = 'dead' AND terminal_at >= date_trunc('minute', $1::timestamptz)
    GROUP BY 1
)
SELECT coalesce(a.m, d.m) AS minute, coalesce(a.attempts, 0) AS attempts,
       coalesce(a.failed, 0) AS failed, coalesce(d.dead, 0) AS dead
FROM a FULL JOIN d ON a.m = d.m
ORDER BY 1
