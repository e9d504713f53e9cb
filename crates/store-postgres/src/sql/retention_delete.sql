-- Removes up to $5 operations finished in status $3 before $4, of the kinds in $1 (with $2:
-- of every kind but those), each kind oldest first, with their attempts and steps (ON DELETE
-- CASCADE). Only succeeded and cancelled operations can match, whatever $3 says. An operation a
-- re-drive names (redrive_of) stays while the re-drive does. Rows another session holds are
-- skipped, so a batch never waits on a worker.
--
-- Its cost follows what it removes, whatever the statistics say (run in a transaction opened
-- with WALK_FINISHED_IN_ORDER, sql.rs): the kinds are the ones in $1, or with $2 the kinds
-- present in status $3 found by a loose scan of operations_finished_kind (one probe per kind);
-- each kind's rows are walked in operations_finished_kind's order (status, kind, terminal_at)
-- and the walk stops at the cutoff, so no row younger than its cutoff and no row of another kind
-- is read. The rows are then found by primary key; the cascades walk
-- operation_attempts_operation and the steps' primary key, the re-drive check
-- operations_redrive_of.
WITH RECURSIVE present AS (
    (SELECT o.kind
     FROM operations o
     WHERE o.status IN ('succeeded', 'cancelled') AND o.status = $3
     ORDER BY o.status, o.kind
     LIMIT 1)
    UNION ALL
    SELECT (SELECT o.kind
            FROM operations o
            WHERE o.status IN ('succeeded', 'cancelled') AND o.status = $3 AND o.kind > p.kind
            ORDER BY o.status, o.kind
            LIMIT 1)
    FROM present p
    WHERE p.kind IS NOT NULL
),
covered AS (
    SELECT k.kind FROM unnest($1::text[]) AS k(kind) WHERE NOT $2
    UNION ALL
    SELECT p.kind FROM present p WHERE $2 AND p.kind IS NOT NULL AND p.kind <> ALL ($1::text[])
),
doomed AS (
    SELECT d.id
    FROM covered c
    CROSS JOIN LATERAL (
        SELECT o.id
        FROM operations o
        WHERE o.status IN ('succeeded', 'cancelled') AND o.status = $3 AND o.kind = c.kind
          AND o.terminal_at < $4
          AND NOT EXISTS (SELECT 1 FROM operations r WHERE r.redrive_of = o.id)
        ORDER BY o.status, o.kind, o.terminal_at
        LIMIT $5
        FOR UPDATE SKIP LOCKED
    ) d
    LIMIT $5
)
DELETE FROM operations o
WHERE o.id = ANY (ARRAY(SELECT id FROM doomed)) AND o.status = $3 AND o.terminal_at < $4
