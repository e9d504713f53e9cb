-- Per minute since $1, oldest first: attempts that ended in it, of those the ones that did not
-- succeed (error, rejected, vanished or unknown), and operations promoted to dead in it; minutes
-- with neither are left out. Each side walks its own index: attempts operation_attempts_ended
-- (ended_at), deaths operations_terminal_at (terminal_at, id).
WITH a AS (
    SELECT date_trunc('minute', ended_at) AS m, count(*) AS attempts,
           count(*) FILTER (WHERE outcome IN ('error', 'rejected', 'vanished', 'unknown'))
               AS failed
    FROM operation_attempts
    WHERE ended_at >= $1
    GROUP BY 1
), d AS (
    SELECT date_trunc('minute', terminal_at) AS m, count(*) AS dead
    FROM operations
    WHERE status = 'dead' AND terminal_at >= $1
    GROUP BY 1
)
SELECT coalesce(a.m, d.m) AS minute, coalesce(a.attempts, 0) AS attempts,
       coalesce(a.failed, 0) AS failed, coalesce(d.dead, 0) AS dead
FROM a FULL JOIN d ON a.m = d.m
ORDER BY 1
