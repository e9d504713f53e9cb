-- Per minute since the minute of $1, oldest first: attempts that ended in it, of those the ones
-- that did not succeed (error, rejected, vanished or unknown), and operations promoted to dead in
-- it; minutes with neither are left out. Both come from trigger-kept per-minute counts read
-- through their primary keys: attempts from attempt_minutes, promotions from dead_minutes
-- (migration 0031), which keeps a death after its operation is re-driven.
WITH a AS (
    SELECT minute AS m, sum(attempts)::int8 AS attempts, sum(failed)::int8 AS failed
    FROM attempt_minutes
    WHERE minute >= date_trunc('minute', $1::timestamptz)
    GROUP BY 1
    HAVING sum(attempts) <> 0
), d AS (
    SELECT minute AS m, sum(dead)::int8 AS dead
    FROM dead_minutes
    WHERE minute >= date_trunc('minute', $1::timestamptz)
    GROUP BY 1
    HAVING sum(dead) <> 0
)
SELECT coalesce(a.m, d.m) AS minute, coalesce(a.attempts, 0) AS attempts,
       coalesce(a.failed, 0) AS failed, coalesce(d.dead, 0) AS dead
FROM a FULL JOIN d ON a.m = d.m
ORDER BY 1
