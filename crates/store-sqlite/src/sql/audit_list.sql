-- The newest ?1 audit rows first, only of action ?2 and actor ?3 when given, and only older than
-- the entry ?4 when given (the next page). Walks the primary key backwards.
SELECT id, at, actor, action, filter, affected, reason, details
FROM audit_log
WHERE (?2 IS NULL OR action = ?2)
  AND (?3 IS NULL OR actor = ?3)
  AND (?4 IS NULL OR id < ?4)
ORDER BY id DESC
LIMIT ?1
