-- Picks one suspect (an operation whose last attempt vanished) to claim isolated, alone in its
-- worker: pending, eligible at ?1, within its deadline, of the kinds in ?2 (a JSON array; empty
-- means any) and held back by no control, oldest eligible first. claim_by_ids.sql then claims it
-- (isolated) under the same write lock. Walks the partial index operations_pending_suspect,
-- which holds only waiting suspects.
-- Limits across the fleet: the kinds ?3 and dependencies ?4 (JSON arrays) may take nothing
-- now (core's ClaimAllowance), so they are left out and do not use up the pick.
SELECT o.id
FROM operations AS o INDEXED BY operations_pending_suspect
WHERE o.status = 'pending'
  AND o.suspect
  AND o.next_eligible_at <= ?1
  AND (o.give_up_at IS NULL OR o.give_up_at >= ?1)
  AND (json_array_length(?2) = 0 OR o.kind IN (SELECT value FROM json_each(?2)))
  AND /*not_held_back*/
  AND o.kind NOT IN (SELECT value FROM json_each(?3))
  AND (o.dependency IS NULL OR o.dependency NOT IN (SELECT value FROM json_each(?4)))
ORDER BY o.next_eligible_at, o.id
LIMIT 1
