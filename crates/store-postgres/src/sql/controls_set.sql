-- Sets, or replaces, the control on scope $1 / value $2: action $3, until $4, reason $5, actor
-- $6, set at "now" ($7; NULL: the database's clock); returns when it was set. Checks the unique
-- index controls_scope_value.
INSERT INTO controls (scope, value, action, until, reason, actor, created_at)
VALUES ($1, $2, $3, $4, $5, $6, coalesce($7::timestamptz, now()))
ON CONFLICT (scope, value) DO UPDATE
SET action = excluded.action, until = excluded.until, reason = excluded.reason,
    actor = excluded.actor, created_at = excluded.created_at
RETURNING created_at
