-- Whether a worker of the kinds in ?2 (a JSON array; empty means any) has work: an operation
-- running, or pending, eligible at ?1, within its deadline and held back by no control. Each arm
-- walks its partial index (operations_running_lease, operations_pending_eligible) and stops at
-- the first match.
SELECT EXISTS (
           SELECT 1 FROM operations AS r INDEXED BY operations_running_lease
           WHERE r.status = 'running'
             AND (json_array_length(?2) = 0 OR r.kind IN (SELECT value FROM json_each(?2))))
    OR EXISTS (
           SELECT 1 FROM operations AS o INDEXED BY operations_pending_eligible
           WHERE o.status = 'pending'
             AND o.next_eligible_at <= ?1
             AND (o.give_up_at IS NULL OR o.give_up_at >= ?1)
             AND (json_array_length(?2) = 0 OR o.kind IN (SELECT value FROM json_each(?2)))
             AND /*not_held_back*/)
