-- Whether a suspect of the kinds in ?2 (a JSON array; empty means any) waits: pending, eligible
-- at ?1, within its deadline and held back by no control. The workers' probe, run every second
-- or so beside the claims, never in them. Walks the partial index operations_pending_suspect,
-- empty unless a worker died with work in flight.
SELECT EXISTS (
    SELECT 1 FROM operations AS o INDEXED BY operations_pending_suspect
    WHERE o.status = 'pending'
      AND o.suspect
      AND o.next_eligible_at <= ?1
      AND (o.give_up_at IS NULL OR o.give_up_at >= ?1)
      AND (json_array_length(?2) = 0 OR o.kind IN (SELECT value FROM json_each(?2)))
      AND /*not_held_back*/)
