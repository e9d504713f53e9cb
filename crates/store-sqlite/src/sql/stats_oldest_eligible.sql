-- The pending operation that has waited longest past its eligible time (by ?1) among those no
-- control holds back (held-back work is counted per control by stats_held_back.sql). INDEXED BY
-- operations_pending_eligible, for the reason given in claim_eligible.sql: the first row no
-- control holds back is the answer.
SELECT o.id, o.kind, o.next_eligible_at
FROM operations AS o INDEXED BY operations_pending_eligible
WHERE o.status = 'pending' AND o.next_eligible_at <= ?1 AND /*not_held_back*/
ORDER BY o.next_eligible_at, o.id
LIMIT 1
