-- The newest ?1 audit rows first. Walks the primary key backwards.
SELECT id, at, actor, action, filter, affected, reason, details
FROM audit_log
ORDER BY id DESC
LIMIT ?1
