-- What kind $1 holds in finished status $2: how many finished before $3 (past their retention),
-- and when the longest-finished one finished. Both walk operations_finished_kind (status, kind,
-- terminal_at) within the kind: the count up to the cutoff, the oldest its first row.
SELECT (SELECT count(*) FROM operations
        WHERE status IN ('succeeded', 'cancelled') AND status = $2 AND kind = $1
          AND terminal_at < $3) AS past_retention,
       (SELECT terminal_at FROM operations
        WHERE status IN ('succeeded', 'cancelled') AND status = $2 AND kind = $1
        ORDER BY terminal_at
        LIMIT 1) AS oldest_finished_at
