-- Writes a settlement core decided for a reconciling operation, as it stands: status ?2,
-- terminal reason ?3, terminal at ?4 (set when the status is terminal), next eligible at ?5,
-- the remote id ?6 (or the stored one), last error ?7 (JSON text); the last wake-up is
-- forgotten so the scheduler wakes a pending one at once. Fenced by the status still being
-- 'reconciling'; no row back means there is nothing to resolve. Walks the primary key.
UPDATE operations
SET status = ?2,
    terminal_reason = ?3,
    terminal_at = ?4,
    next_eligible_at = ?5,
    remote_id = coalesce(?6, remote_id),
    last_error = ?7,
    last_woken_at = NULL,
    updated_at = ?1
WHERE id = ?8 AND status = 'reconciling'
RETURNING status
