-- The pending operation that has waited longest past its eligible time (by ?1). INDEXED BY
-- operations_pending_eligible, for the reason given in claim_eligible.sql: the first row is the
-- answer.
SELECT id, kind, next_eligible_at
FROM operations INDEXED BY operations_pending_eligible
WHERE status = 'pending' AND next_eligible_at <= ?1
ORDER BY next_eligible_at, id
LIMIT 1
