-- Creates re-drive job ?1 (actor ?2, state ?3, request ?4, ended before ?5, planned ?6, released
-- ?7, reason ?8) or updates its state, progress and reason; updated_at is the store's now (?9).
-- created_at and actor stay as first saved; a stop asked for is kept until the job turns running
-- again (a resumption), which clears it. Returns the row. Walks the primary key.
INSERT INTO redrive_jobs AS j (id, actor, state, request, ended_before, planned, released, reason,
                               created_at, updated_at)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?9)
ON CONFLICT (id) DO UPDATE
SET state = excluded.state, request = excluded.request, planned = excluded.planned,
    released = excluded.released, reason = excluded.reason, updated_at = excluded.updated_at,
    stop_requested_by = CASE WHEN j.state <> 'running' AND excluded.state = 'running' THEN NULL
                             ELSE j.stop_requested_by END,
    stop_requested_at = CASE WHEN j.state <> 'running' AND excluded.state = 'running' THEN NULL
                             ELSE j.stop_requested_at END
RETURNING *
