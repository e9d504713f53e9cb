-- The $1 audit rows just newer than the entry $4, oldest first (the caller shows them newest
-- first), only of action $2 and actor $3 when given: the previous page. Walks the primary key of
-- audit_log forwards.
SELECT id, at, actor, action, filter, affected, reason, details
FROM audit_log
WHERE ($2::text IS NULL OR action = $2)
  AND ($3::text IS NULL OR actor = $3)
  AND id > $4
ORDER BY id
LIMIT $1
