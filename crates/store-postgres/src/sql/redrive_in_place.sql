-- Re-drives terminal operations in place: each of $1 becomes pending again, eligible at its time
-- in $2, with attempts, terminal fields, crash-loop, suspect, snooze and reconcile counters,
-- alert and last
-- wake-up reset, and redrive_count + 1. The deadline becomes eligible time + $4 ms when $4 is
-- given, is cleared when it has passed by then, and is kept otherwise. $3 is "now" (NULL: the
-- database's clock). Returns (id, id, eligible time) like redrive_as_new.sql. Walks the primary
-- key; the rows were locked by the caller's selection.
WITH now AS (SELECT coalesce($3::timestamptz, now()) AS t)
UPDATE operations o
SET status = 'pending', attempt = 0, next_eligible_at = i.at,
    terminal_reason = NULL, terminal_at = NULL, vanished_streak = 0,
    suspect = false, isolated = false, snoozes = 0, unknowns = 0,
    reconcile_attempts = 0, alerted_at = NULL, last_woken_at = NULL,
    claim_token = NULL, lease_until = NULL,
    redrive_count = o.redrive_count + 1, updated_at = now.t,
    give_up_at = CASE
        WHEN $4::int8 IS NOT NULL THEN i.at + $4::int8 * interval '1 millisecond'
        WHEN o.give_up_at < i.at THEN NULL
        ELSE o.give_up_at END
FROM UNNEST($1::uuid[], $2::timestamptz[]) AS i(id, at), now
WHERE o.id = i.id
RETURNING o.id AS from_id, o.id AS to_id, i.at
