-- Operations promoted to dead at or after ?1, by the code version of their last attempt
-- ('unknown' when none was recorded). Walks operations_status_kind for status 'dead'.
SELECT coalesce(code_version, 'unknown') AS k, count(*) AS n
FROM operations
WHERE status = 'dead' AND terminal_at >= ?1
GROUP BY 1
