-- Picks up to ?3 reconciling operations whose reconcile time has come by ?1, of the kinds in ?2
-- (a JSON array; empty means any), longest due first; reconcile_take.sql then pushes them back
-- under the same write lock. INDEXED BY operations_reconciling_due, for the reason given in
-- claim_eligible.sql.
SELECT o.id
FROM operations AS o INDEXED BY operations_reconciling_due
WHERE o.status = 'reconciling'
  AND o.next_eligible_at <= ?1
  AND (json_array_length(?2) = 0 OR o.kind IN (SELECT value FROM json_each(?2)))
ORDER BY o.next_eligible_at, o.id
LIMIT ?3
