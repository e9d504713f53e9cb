-- Pending operations, per kind, whose kind no worker seen within $2 microseconds of "now" ($1;
-- NULL: the database's clock) handles: how many, how many of the oldest $3 are eligible now,
-- and the earliest creation time among those. Reads no more rows than that, however large the
-- kind's backlog: the kinds with pending operations and their counts come from the
-- trigger-kept counts (operation_counts, a few hundred rows), the live workers' kinds from the
-- (small) workers table, and the rest from the first $3 entries of the kind in
-- operations_status_kind_waiting_or_dead (status, kind, id), in id order: ids are UUID v7 made
-- at enqueue, so the first is the oldest as long as the hosts' clocks agree. Run in a transaction
-- opened with STATS_INDEXES_ONLY (sql.rs).
WITH waiting AS (
    SELECT c.kind, sum(c.operations)::int8 AS pending
    FROM operation_counts c
    WHERE c.status = 'pending'
    GROUP BY c.kind
    HAVING sum(c.operations) > 0
),
unhandled AS (
    SELECT k.kind, k.pending
    FROM waiting k
    WHERE NOT EXISTS (
        SELECT 1 FROM workers w
        WHERE w.last_seen_at >= coalesce($1::timestamptz, now()) - $2 * interval '1 microsecond'
          AND k.kind = ANY (w.kinds))
)
SELECT u.kind, u.pending, f.eligible, f.scanned, f.oldest_created_at
FROM unhandled u
CROSS JOIN LATERAL (
    SELECT count(*) FILTER (WHERE o.next_eligible_at <= coalesce($1::timestamptz, now()))
               AS eligible,
           count(*) AS scanned,
           min(o.created_at) AS oldest_created_at
    FROM (SELECT o.id, o.next_eligible_at, o.created_at
          FROM operations o
          WHERE o.status = 'pending' AND o.status NOT IN ('running', 'succeeded', 'cancelled')
            AND o.kind = u.kind
          ORDER BY o.id
          LIMIT $3) AS o
) f
WHERE f.scanned > 0
ORDER BY u.kind
