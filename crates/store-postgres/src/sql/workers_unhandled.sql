-- Pending operations, per kind, whose kind no worker seen within $2 microseconds of "now" ($1;
-- NULL: the database's clock) handles: how many, how many are eligible now, and the oldest
-- creation time. Reads operations_status_kind (status, kind, id) for the pending rows, and the
-- (small) workers table per kind.
SELECT o.kind, count(*) AS pending,
       count(*) FILTER (WHERE o.next_eligible_at <= coalesce($1::timestamptz, now())) AS eligible,
       min(o.created_at) AS oldest_created_at
FROM operations o
WHERE o.status = 'pending'
  AND NOT EXISTS (
      SELECT 1 FROM workers w
      WHERE w.last_seen_at >= coalesce($1::timestamptz, now()) - $2 * interval '1 microsecond'
        AND o.kind = ANY (w.kinds))
GROUP BY o.kind
ORDER BY o.kind
