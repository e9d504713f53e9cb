-- The creation time of the oldest waiting or running operation, as the first one enqueued: ids
-- are UUID v7 made at enqueue, so within a status and kind the first id in
-- operations_status_kind_waiting_or_dead (status, kind, id) is the oldest. A loose scan of that
-- index finds the kinds present in each waiting status (one probe each), and one more probe per
-- status and kind reads its first row: the cost follows the number of kinds, not the backlog.
-- Running rows, which that index leaves out, are read through operations_running_lease: there are
-- never more of them than the fleet's claims. Each probe repeats the index's condition (status not
-- running, succeeded or cancelled), so that the planner may use it.
WITH RECURSIVE present(status, kind) AS (
    SELECT s.status,
           (SELECT o.kind FROM operations o
            WHERE o.status = s.status AND o.status NOT IN ('running', 'succeeded', 'cancelled')
            ORDER BY o.status, o.kind
            LIMIT 1)
    FROM unnest(ARRAY['pending', 'reconciling', 'held']) AS s(status)
    UNION ALL
    SELECT p.status,
           (SELECT o.kind FROM operations o
            WHERE o.status = p.status AND o.status NOT IN ('running', 'succeeded', 'cancelled')
              AND o.kind > p.kind
            ORDER BY o.status, o.kind
            LIMIT 1)
    FROM present p
    WHERE p.kind IS NOT NULL
)
SELECT least(
    (SELECT min((SELECT o.created_at
                 FROM operations o
                 WHERE o.status = p.status AND o.status NOT IN ('running', 'succeeded', 'cancelled')
                   AND o.kind = p.kind
                 ORDER BY o.status, o.kind, o.id
                 LIMIT 1))
     FROM present p
     WHERE p.kind IS NOT NULL),
    (SELECT min(o.created_at) FROM operations o WHERE o.status = 'running'))
