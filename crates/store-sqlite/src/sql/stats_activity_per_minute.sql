-- Attempts that ended, the failed ones among them, and promotions to dead, per minute since the
-- minute of ?1, oldest minute first. Stored times are fixed-width text, so their first 16
-- characters name the minute. Both come from trigger-kept per-minute counts read through their
-- primary keys: attempts from attempt_minutes, promotions from dead_minutes (migration 0031),
-- which keeps a death after its operation is re-driven.
SELECT m AS minute, sum(attempts) AS attempts, sum(failed) AS failed, sum(dead) AS dead
FROM (SELECT substr(minute, 1, 16) AS m, attempts, failed, 0 AS dead
      FROM attempt_minutes
      WHERE minute >= substr(?1, 1, 16)
      UNION ALL
      SELECT substr(minute, 1, 16), 0, 0, dead
      FROM dead_minutes
      WHERE minute >= substr(?1, 1, 16))
GROUP BY m
HAVING sum(attempts) <> 0 OR sum(dead) <> 0
ORDER BY m
