-- The pending operation that has been eligible longest at $1 among those no control holds back
-- (held-back work is counted per control by stats_held_back.sql). Walks the partial index
-- operations_pending_eligible (next_eligible_at, id) in order and stops at its first row that no
-- control holds back, as the claim does.
SELECT id, kind, next_eligible_at FROM operations
WHERE status = 'pending' AND next_eligible_at <= $1 AND /*not_held_back*/
ORDER BY next_eligible_at, id
LIMIT 1
