-- Asks re-drive job ?1 to stop on behalf of ?2, if it is running (a stop asked for already keeps
-- its first asker), at the store's now (?3). Returns the row, changed or not (none: no such
-- job). Walks the primary key.
UPDATE redrive_jobs
SET stop_requested_by = CASE WHEN state = 'running' THEN coalesce(stop_requested_by, ?2)
                             ELSE stop_requested_by END,
    stop_requested_at = CASE WHEN state = 'running' THEN coalesce(stop_requested_at, ?3)
                             ELSE stop_requested_at END
WHERE id = ?1
RETURNING *
