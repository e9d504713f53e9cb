-- Removes up to $5 operations finished in status $3 before $4, of the kinds in $1 (with $2:
-- of every kind but those), oldest first, with their attempts and steps (ON DELETE CASCADE).
-- Only succeeded and cancelled operations can match, whatever $3 says. An operation a re-drive
-- names (redrive_of) stays while the re-drive does. Rows another session holds are skipped, so
-- a batch never waits on a worker. Walks operations_finished_at (terminal_at) from its start and
-- stops at the cutoff or after $5 rows; the cascades walk operation_attempts_operation and the
-- steps' primary key, the re-drive check operations_redrive_of.
WITH doomed AS (
    SELECT o.id
    FROM operations o
    WHERE o.status IN ('succeeded', 'cancelled') AND o.status = $3
      AND o.terminal_at < $4
      AND CASE WHEN $2 THEN o.kind <> ALL ($1::text[]) ELSE o.kind = ANY ($1::text[]) END
      AND NOT EXISTS (SELECT 1 FROM operations r WHERE r.redrive_of = o.id)
    ORDER BY o.terminal_at
    LIMIT $5
    FOR UPDATE SKIP LOCKED
)
DELETE FROM operations o
USING doomed d
WHERE o.id = d.id AND o.status = $3 AND o.terminal_at < $4
