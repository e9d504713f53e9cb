-- Marks up to $3 stale operations of kind $4 woken at "now" ($1; NULL: the database's clock) and
-- returns them, oldest eligible first, skipping rows another transaction holds: pending,
-- eligible, within their deadline, held back by no control, woken for their current eligibility
-- more than $2 ms ago and unclaimed since. The scheduler's re-wake, within its budget. Walks the
-- partial index operations_pending_eligible in order (WALK_PENDING_IN_ORDER).
WITH now AS (SELECT coalesce($1::timestamptz, now()) AS t),
due AS (
    SELECT id AS pid FROM operations
    WHERE status = 'pending' AND kind = $4 AND next_eligible_at <= coalesce($1::timestamptz, now())
      AND (give_up_at IS NULL OR give_up_at >= coalesce($1::timestamptz, now()))
      AND last_woken_at >= next_eligible_at
      AND last_woken_at < coalesce($1::timestamptz, now()) - $2::int8 * interval '1 millisecond'
      AND /*not_held_back*/
    ORDER BY next_eligible_at, id
    LIMIT $3
    FOR UPDATE OF operations SKIP LOCKED
)
UPDATE operations o SET last_woken_at = now.t
FROM due, now
WHERE o.id = due.pid
RETURNING o.id, o.kind
