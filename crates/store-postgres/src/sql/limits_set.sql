-- Sets or replaces the limit on $1 (scope) / $2 (value): $3 running at most, $4 starts per
-- second at most (NULL: no such bound), $5 why, $6 who, at $7 (NULL: the database's clock). A
-- replaced limit keeps its window of recent starts, so changing a rate does not reset it.
INSERT INTO operation_limits (scope, value, max_running, per_second, reason, actor, set_at)
VALUES ($1, $2, $3, $4, $5, $6, coalesce($7::timestamptz, now()))
ON CONFLICT (scope, value) DO UPDATE
SET max_running = excluded.max_running, per_second = excluded.per_second,
    reason = excluded.reason, actor = excluded.actor, set_at = excluded.set_at
RETURNING scope, value, max_running, per_second, recent_starts, reason, actor, set_at
