-- The scheduler's pick: marks up to ?3 due operations woken at ?1 and returns them (id and kind,
-- which routes the wake-up), oldest
-- eligible first. Due: pending, eligible, within the deadline, held back by no control, and
-- never woken or woken before it became eligible (a retry); with ?4 = 1, also those woken before
-- ?2 (the re-wake interval ago: stale). With ?5 (a time), only kinds that a worker seen at or
-- after ?5 runs. One statement, so two schedulers never get the same operation from one call
-- each. INDEXED BY operations_pending_eligible, for the reason given in claim_eligible.sql.
UPDATE operations SET last_woken_at = ?1
WHERE id IN (SELECT o.id FROM operations AS o INDEXED BY operations_pending_eligible
             WHERE o.status = 'pending'
               AND o.next_eligible_at <= ?1
               AND (o.give_up_at IS NULL OR o.give_up_at >= ?1)
               AND (o.last_woken_at IS NULL OR o.last_woken_at < o.next_eligible_at
                    OR (?4 AND o.last_woken_at < ?2))
               AND (?5 IS NULL OR o.kind IN (SELECT k.value FROM workers AS w, json_each(w.kinds) AS k
                                             WHERE w.last_seen_at >= ?5))
               AND /*not_held_back*/
             ORDER BY o.next_eligible_at, o.id
             LIMIT ?3)
RETURNING id, kind
