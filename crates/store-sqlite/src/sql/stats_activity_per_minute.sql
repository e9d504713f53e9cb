-- Attempts that ended, the failed ones among them, and promotions to dead, per minute since ?1,
-- oldest minute first. Stored times are fixed-width text, so their first 16 characters name the
-- minute. Walks operation_attempts_ended, and operations_status_kind for status 'dead'.
SELECT m AS minute, sum(attempts) AS attempts, sum(failed) AS failed, sum(dead) AS dead
FROM (SELECT substr(ended_at, 1, 16) AS m, 1 AS attempts,
             outcome IN ('error', 'rejected', 'vanished', 'unknown') AS failed, 0 AS dead
      FROM operation_attempts
      WHERE ended_at >= ?1
      UNION ALL
      SELECT substr(terminal_at, 1, 16), 0, 0, 1
      FROM operations
      WHERE status = 'dead' AND terminal_at >= ?1)
GROUP BY m
ORDER BY m
