-- Pending operations, per kind, whose kind no worker seen within $2 microseconds of "now" ($1;
-- NULL: the database's clock) handles: how many, how many are eligible now, and the oldest
-- creation time. The kinds with pending operations come from the trigger-kept counts
-- (operation_counts, a few hundred rows), the live workers' kinds from the (small) workers
-- table; only the rows of kinds nobody handles are read, through operations_status_kind
-- (status, kind, id), one kind at a time. A backlog of kinds that workers handle costs nothing,
-- however large. Run in a transaction opened with STATS_INDEXES_ONLY (sql.rs).
WITH waiting AS (
    SELECT c.kind
    FROM operation_counts c
    WHERE c.status = 'pending'
    GROUP BY c.kind
    HAVING sum(c.operations) > 0
),
unhandled AS (
    SELECT k.kind
    FROM waiting k
    WHERE NOT EXISTS (
        SELECT 1 FROM workers w
        WHERE w.last_seen_at >= coalesce($1::timestamptz, now()) - $2 * interval '1 microsecond'
          AND k.kind = ANY (w.kinds))
)
SELECT u.kind, f.pending, f.eligible, f.oldest_created_at
FROM unhandled u
CROSS JOIN LATERAL (
    SELECT count(*) AS pending,
           count(*) FILTER (WHERE o.next_eligible_at <= coalesce($1::timestamptz, now())) AS eligible,
           min(o.created_at) AS oldest_created_at
    FROM operations o
    WHERE o.status = 'pending' AND o.kind = u.kind
) f
WHERE f.pending > 0
ORDER BY u.kind
