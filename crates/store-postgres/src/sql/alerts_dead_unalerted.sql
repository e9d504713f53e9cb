-- Up to $1 dead operations whose promotion has not been announced yet, oldest first. Walks the
-- partial index operations_dead_unalerted (terminal_at).
SELECT * FROM operations
WHERE status = 'dead' AND alerted_at IS NULL
ORDER BY terminal_at, id
LIMIT $1
