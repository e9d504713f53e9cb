-- When an operation of dependency ?1 (of kind ?2 when ?1 is NULL) first succeeded after ?3: a
-- re-drive's dry run asks whether the cause of a group's deaths is gone. Walks
-- operations_finished_at from ?3 on and stops at the first match.
SELECT o.terminal_at FROM operations o INDEXED BY operations_finished_at
WHERE o.status IN ('succeeded', 'cancelled') AND o.status = 'succeeded' AND o.terminal_at > ?3
  AND CASE WHEN ?1 IS NULL THEN o.kind = ?2 ELSE o.dependency = ?1 END
ORDER BY o.terminal_at
LIMIT 1
