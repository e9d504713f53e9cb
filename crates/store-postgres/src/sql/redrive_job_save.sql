-- Creates re-drive job $2 (actor $3, state $4, request $5, ended before $6, planned $7, released
-- $8, reason $9) or updates its state, progress and reason; updated_at is "now" ($1; NULL: the
-- database's clock). created_at and actor stay as first saved; a stop asked for is kept until the
-- job turns running again (a resumption), which clears it. Returns the row. Walks the primary key.
WITH now AS (SELECT coalesce($1::timestamptz, now()) AS t)
INSERT INTO redrive_jobs AS j (id, actor, state, request, ended_before, planned, released, reason,
                               created_at, updated_at)
SELECT $2, $3, $4, $5, $6, $7, $8, $9, now.t, now.t FROM now
ON CONFLICT (id) DO UPDATE
SET state = excluded.state, request = excluded.request, planned = excluded.planned,
    released = excluded.released, reason = excluded.reason, updated_at = excluded.updated_at,
    stop_requested_by = CASE WHEN j.state <> 'running' AND excluded.state = 'running' THEN NULL
                             ELSE j.stop_requested_by END,
    stop_requested_at = CASE WHEN j.state <> 'running' AND excluded.state = 'running' THEN NULL
                             ELSE j.stop_requested_at END
RETURNING j.*
