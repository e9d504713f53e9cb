-- Operations promoted to dead at or after ?1, by kind. Walks operations_status_kind for status
-- 'dead'.
SELECT kind AS k, count(*) AS n
FROM operations
WHERE status = 'dead' AND terminal_at >= ?1
GROUP BY kind
