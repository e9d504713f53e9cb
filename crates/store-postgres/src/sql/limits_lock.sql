-- Locks the limits a claim of the kinds $1 (empty: any) may reach, so that claims of limited
-- work take turns: every dependency limit (any operation may call a dependency), and the kind
-- limits on those kinds. No row (the usual case): the claim goes on unlimited, without a lock.
-- In (scope, value) order, so that two claimers never lock in opposite orders.
SELECT scope, value, max_running, per_second, recent_starts, reason, actor, set_at
FROM operation_limits
WHERE scope = 'dependency' OR cardinality($1::text[]) = 0 OR value = ANY($1)
ORDER BY scope, value
FOR UPDATE
