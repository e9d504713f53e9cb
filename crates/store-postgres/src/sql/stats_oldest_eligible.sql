-- The pending operation that has been eligible longest at $1. Walks the partial index
-- operations_pending_eligible (next_eligible_at, id) and stops at its first row.
SELECT id, kind, next_eligible_at FROM operations
WHERE status = 'pending' AND next_eligible_at <= $1
ORDER BY next_eligible_at, id
LIMIT 1
