-- The controls in force at "now" ($1; NULL: the database's clock): no until, or an until still
-- ahead. Reads the whole (small) table.
SELECT scope, value, action, until, reason, actor, created_at
FROM controls
WHERE until IS NULL OR until > coalesce($1::timestamptz, now())
ORDER BY scope, value
