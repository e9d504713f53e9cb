-- The newest $1 audit rows, newest first. Walks the primary key of audit_log backwards.
SELECT id, at, actor, action, filter, affected, reason, details
FROM audit_log
ORDER BY id DESC
LIMIT $1
