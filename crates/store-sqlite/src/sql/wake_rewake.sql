-- The scheduler's budgeted re-wake: marks up to ?3 stale operations of kind ?4 woken at ?1 and
-- returns them, oldest eligible first. Stale: pending, eligible, within the deadline, held back
-- by no control, woken for their current eligibility before ?2 (the re-wake interval ago) and
-- unclaimed since. INDEXED BY operations_pending_eligible, as wake_due.sql.
UPDATE operations SET last_woken_at = ?1
WHERE id IN (SELECT o.id FROM operations AS o INDEXED BY operations_pending_eligible
             WHERE o.status = 'pending'
               AND o.next_eligible_at <= ?1
               AND o.kind = ?4
               AND (o.give_up_at IS NULL OR o.give_up_at >= ?1)
               AND o.last_woken_at >= o.next_eligible_at
               AND o.last_woken_at < ?2
               AND /*not_held_back*/
             ORDER BY o.next_eligible_at, o.id
             LIMIT ?3)
RETURNING id, kind
