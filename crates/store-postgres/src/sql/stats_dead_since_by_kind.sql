-- Operations promoted to dead at or after $1, counted by kind. Walks the partial index
-- operations_terminal_at (terminal_at, id).
SELECT kind, count(*) FROM operations
WHERE status = 'dead' AND terminal_at >= $1
GROUP BY kind
