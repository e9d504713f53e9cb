-- Per kind, the wake-ups that should be on the broker at ?1: pending, eligible operations within
-- their deadline, held back by no control, woken for their current eligibility and unclaimed
-- since (signalled); those woken before ?2 (stale); and whether a worker seen at or after ?3 runs
-- the kind. Walks operations_pending_eligible.
SELECT o.kind,
       count(*) AS signalled,
       sum(o.last_woken_at < ?2) AS stale,
       o.kind IN (SELECT k.value FROM workers AS w, json_each(w.kinds) AS k
                  WHERE w.last_seen_at >= ?3) AS handled
FROM operations AS o INDEXED BY operations_pending_eligible
WHERE o.status = 'pending'
  AND o.next_eligible_at <= ?1
  AND (o.give_up_at IS NULL OR o.give_up_at >= ?1)
  AND o.last_woken_at >= o.next_eligible_at
  AND /*not_held_back*/
GROUP BY o.kind
ORDER BY o.kind
