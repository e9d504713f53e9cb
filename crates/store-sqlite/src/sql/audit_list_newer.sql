-- The ?1 audit rows just newer than the entry ?4, oldest first (the caller shows them newest
-- first), only of action ?2 and actor ?3 when given: the previous page. Walks the primary key
-- forwards.
SELECT id, at, actor, action, filter, affected, reason, details
FROM audit_log
WHERE (?2 IS NULL OR action = ?2)
  AND (?3 IS NULL OR actor = ?3)
  AND id > ?4
ORDER BY id
LIMIT ?1
