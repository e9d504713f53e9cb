-- Takes up to $2 recorded alerts due to be sent at "now" ($1; NULL: the database's clock),
-- holds and pauses pending or failed (a dead-letter announcement is retried from its
-- operation), oldest due first, each for $3 ms (its due time moves past the lease, so
-- another sender takes it only when this one died). Walks alerts_unsent and skips rows another
-- sender is taking this instant.
WITH now AS (SELECT coalesce($1::timestamptz, now()) AS t),
due AS (
    SELECT a.id AS pid FROM alerts a, now
    WHERE a.status <> 'sent' AND a.event <> 'dead' AND a.due_at <= now.t
    ORDER BY a.due_at, a.id
    LIMIT $2
    FOR UPDATE OF a SKIP LOCKED
)
UPDATE alerts a SET due_at = now.t + $3::int8 * interval '1 millisecond'
FROM due, now
WHERE a.id = due.pid
RETURNING a.*
