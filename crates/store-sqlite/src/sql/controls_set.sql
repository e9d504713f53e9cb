-- Sets, or replaces, the control on (scope ?1, value ?2). Walks controls_scope_value.
INSERT INTO controls (scope, value, action, until, reason, actor, created_at)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
ON CONFLICT (scope, value) DO UPDATE
SET action = excluded.action,
    until = excluded.until,
    reason = excluded.reason,
    actor = excluded.actor,
    created_at = excluded.created_at
