-- The controls in force at ?1 (no until, or an until still ahead), by scope and value. Scans
-- controls, which holds a handful of rows.
SELECT scope, value, action, until, reason, actor, created_at
FROM controls
WHERE until IS NULL OR until > ?1
ORDER BY scope, value
