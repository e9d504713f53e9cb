-- Asks re-drive job $2 to stop on behalf of $3, if it is running (a stop asked for already keeps
-- its first asker); at "now" ($1; NULL: the database's clock). Returns the row, changed or not
-- (none: no such job). Walks the primary key.
UPDATE redrive_jobs j
SET stop_requested_by = CASE WHEN j.state = 'running' THEN coalesce(j.stop_requested_by, $3)
                             ELSE j.stop_requested_by END,
    stop_requested_at = CASE WHEN j.state = 'running'
                             THEN coalesce(j.stop_requested_at, coalesce($1::timestamptz, now()))
                             ELSE j.stop_requested_at END
WHERE j.id = $2
RETURNING j.*
