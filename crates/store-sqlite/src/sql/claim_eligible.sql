-- Picks up to ?3 operations eligible for longer than the aging period (core's PRIORITY_AGING:
-- next_eligible_at at or before ?4), oldest eligible first, whatever their priority: the
-- starvation guard, walked before the priority levels (claim_eligible_level.sql; README,
-- "Priorities"). Pending, within their deadline at ?1, of the kinds in ?2 (a JSON array; empty
-- means any), held back by no control (so paused rows do not use up the limit), and not suspects
-- (claimed only alone). claim_by_ids.sql then claims the picked ids under the same write lock.
-- INDEXED BY: without statistics SQLite prefers operations_status_kind and sorts every pending
-- row; the partial index operations_pending_eligible reads eligible rows in claim order and
-- stops at the limit, so the cost does not grow with finished rows.
-- Limits across the fleet: the kinds ?5 and dependencies ?6 (JSON arrays) may take nothing
-- now (core's ClaimAllowance), so they are left out and do not use up the pick.
SELECT o.id
FROM operations AS o INDEXED BY operations_pending_eligible
WHERE o.status = 'pending'
  AND NOT o.suspect
  AND o.next_eligible_at <= ?4
  AND (o.give_up_at IS NULL OR o.give_up_at >= ?1)
  AND (json_array_length(?2) = 0 OR o.kind IN (SELECT value FROM json_each(?2)))
  AND /*not_held_back*/
  AND o.kind NOT IN (SELECT value FROM json_each(?5))
  AND (o.dependency IS NULL OR o.dependency NOT IN (SELECT value FROM json_each(?6)))
ORDER BY o.next_eligible_at, o.id
LIMIT ?3
