-- Per kind, the wake-ups that should be on the broker at "now" ($1; NULL: the database's clock):
-- pending, eligible operations within their deadline, held back by no control, woken for their
-- current eligibility and unclaimed since (signalled); those woken more than $2 ms ago (stale);
-- and whether a worker seen within $3 microseconds runs the kind. Reads the pending rows (the
-- partial index operations_pending_eligible) and the small `workers` table.
SELECT kind,
       count(*) AS signalled,
       count(*) FILTER (WHERE last_woken_at < coalesce($1::timestamptz, now()) - $2::int8 * interval '1 millisecond') AS stale,
       EXISTS (SELECT 1 FROM workers w
               WHERE w.last_seen_at >= coalesce($1::timestamptz, now()) - $3::int8 * interval '1 microsecond'
                 AND operations.kind = ANY (w.kinds)) AS handled
FROM operations
WHERE status = 'pending' AND next_eligible_at <= coalesce($1::timestamptz, now())
  AND (give_up_at IS NULL OR give_up_at >= coalesce($1::timestamptz, now()))
  AND last_woken_at >= next_eligible_at
  AND /*not_held_back*/
GROUP BY kind
ORDER BY kind
