-- Attempts that ended, the failed ones among them, and promotions to dead, per minute since the
-- minute of ?1, oldest minute first. Stored times are fixed-width text, so their first 16
-- characters name the minute. Attempts come from the trigger-kept per-minute counts
-- (attempt_minutes, through its primary key), deaths from operations_status_kind for status
-- 'dead'.
SELECT m AS minute, sum(attempts) AS attempts, sum(failed) AS failed, sum(dead) AS dead
FROM (SELECT substr(minute, 1, 16) AS m, attempts, failed, 0 AS dead
      FROM attempt_minutes
      WHERE minute >= substr(?1, 1, 16)
      UNION ALL
      SELECT substr(terminal_at, 1, 16), 0, 0, 1
      FROM operations
      WHERE status = 'dead' AND terminal_at >= substr(?1, 1, 16))
GROUP BY m
HAVING sum(attempts) <> 0 OR sum(dead) <> 0
ORDER BY m
