-- Operations promoted to dead at or after $1, counted by the code version of their last attempt
-- ('unknown' when none was recorded). Walks the partial index operations_terminal_at
-- (terminal_at, id).
SELECT coalesce(code_version, 'unknown'), count(*) FROM operations
WHERE status = 'dead' AND terminal_at >= $1
GROUP BY 1
