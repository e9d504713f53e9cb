-- Picks up to ?3 operations of priority ?5 that became eligible after the aging cut ?4 and at
-- or before ?1, oldest eligible first; otherwise as claim_eligible.sql (pending, within their
-- deadline, of the kinds in ?2, held back by no control, not suspects). The claim runs it for
-- each level, highest first, after the aged operations, until it has its limit (README,
-- "Priorities"). INDEXED BY operations_pending_priority (priority, next_eligible_at, id): the
-- walk reads only the level's eligible range, never a row that is not yet eligible.
-- Limits across the fleet: the kinds ?6 and dependencies ?7 (JSON arrays) may take nothing
-- now (core's ClaimAllowance), so they are left out and do not use up the pick.
SELECT o.id
FROM operations AS o INDEXED BY operations_pending_priority
WHERE o.status = 'pending'
  AND o.priority = ?5
  AND o.next_eligible_at > ?4
  AND o.next_eligible_at <= ?1
  AND NOT o.suspect
  AND (o.give_up_at IS NULL OR o.give_up_at >= ?1)
  AND (json_array_length(?2) = 0 OR o.kind IN (SELECT value FROM json_each(?2)))
  AND /*not_held_back*/
  AND o.kind NOT IN (SELECT value FROM json_each(?6))
  AND (o.dependency IS NULL OR o.dependency NOT IN (SELECT value FROM json_each(?7)))
ORDER BY o.next_eligible_at, o.id
LIMIT ?3
