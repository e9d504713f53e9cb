-- Claims up to $2 dead operations whose announcement is due (not announced yet, and not claimed
-- by another announcer, or its claim or retry time has come) at "now" ($1; NULL: the database's
-- clock), each for $3 milliseconds. Walks the partial index operations_dead_unalerted
-- (terminal_at) and skips rows another announcer is claiming this instant.
WITH now AS (SELECT coalesce($1::timestamptz, now()) AS t),
due AS (
    SELECT o.id AS pid FROM operations o, now
    WHERE o.status = 'dead' AND o.alerted_at IS NULL
      AND (o.alert_due_at IS NULL OR o.alert_due_at <= now.t)
    ORDER BY o.terminal_at, o.id
    LIMIT $2
    FOR UPDATE OF o SKIP LOCKED
)
UPDATE operations o SET alert_due_at = now.t + $3::int8 * interval '1 millisecond'
FROM due, now
WHERE o.id = due.pid
RETURNING o.*
