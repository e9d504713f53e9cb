-- The kinds that have succeeded operations, by a loose scan of operations_finished_kind (status,
-- kind, terminal_at): one probe per kind, however many operations each holds.
WITH RECURSIVE present AS (
    (SELECT o.kind
     FROM operations o
     WHERE o.status IN ('succeeded', 'cancelled') AND o.status = 'succeeded'
     ORDER BY o.status, o.kind
     LIMIT 1)
    UNION ALL
    SELECT (SELECT o.kind
            FROM operations o
            WHERE o.status IN ('succeeded', 'cancelled') AND o.status = 'succeeded'
              AND o.kind > p.kind
            ORDER BY o.status, o.kind
            LIMIT 1)
    FROM present p
    WHERE p.kind IS NOT NULL
)
SELECT kind FROM present WHERE kind IS NOT NULL
