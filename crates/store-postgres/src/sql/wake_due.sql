-- Marks up to $3 due operations woken at "now" ($1; NULL: the database's clock) and returns them
-- (id and kind, which routes the wake-up),
-- oldest eligible first, skipping rows another transaction holds: pending, eligible, within
-- their deadline, held back by no control, and never woken or woken before they became eligible
-- (a retry); with $4, also those woken more than $2 ms ago (stale). With $5 (microseconds), only
-- kinds that a worker seen within $5 runs (the small `workers` table). Walks the partial index
-- operations_pending_eligible (next_eligible_at, id) in order; it runs in a transaction opened
-- with WALK_PENDING_IN_ORDER (sql.rs) after wake_leader.sql.
WITH now AS (SELECT coalesce($1::timestamptz, now()) AS t),
due AS (
    SELECT id AS pid FROM operations
    WHERE status = 'pending' AND next_eligible_at <= coalesce($1::timestamptz, now())
      AND (give_up_at IS NULL OR give_up_at >= coalesce($1::timestamptz, now()))
      AND (last_woken_at IS NULL OR last_woken_at < next_eligible_at
           OR ($4::bool AND last_woken_at < coalesce($1::timestamptz, now()) - $2::int8 * interval '1 millisecond'))
      AND ($5::int8 IS NULL OR EXISTS (
          SELECT 1 FROM workers w
          WHERE w.last_seen_at >= coalesce($1::timestamptz, now()) - $5::int8 * interval '1 microsecond'
            AND operations.kind = ANY (w.kinds)))
      AND /*not_held_back*/
    ORDER BY next_eligible_at, id
    LIMIT $3
    FOR UPDATE OF operations SKIP LOCKED
)
UPDATE operations o SET last_woken_at = now.t
FROM due, now
WHERE o.id = due.pid
RETURNING o.id, o.kind
