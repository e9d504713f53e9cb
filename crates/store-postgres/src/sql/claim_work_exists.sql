-- Whether a worker of kinds $2 (empty: any) has work: an operation of those kinds that is running,
-- or pending, eligible at "now" ($1; NULL: the database's clock), within its deadline and held
-- back by no control. Each arm stops at its first row, walking its partial index in order (in a
-- transaction opened with WALK_PENDING_IN_ORDER, sql.rs). Running rows are found by walking
-- operations_running_lease from its latest lease back: under load the newest leases are the
-- claims being worked on, while the index's oldest end holds an entry for every claim since the
-- last vacuum whose row has ended since. An EXISTS walked it from that end: 300 pages and 8-20 ms
-- per call (every 200 ms, `--exit-when-idle`) once a drain had ended 100,000 operations. Pending
-- ones are found by walking operations_pending_eligible in its order (the first eligible row). An
-- EXISTS there let a planner that believed most rows pending scan the table from its start for a
-- first match, past every finished row: 33 ms per call at 100,000 rows.
SELECT (
    SELECT id FROM operations
    WHERE status = 'running'
      AND (cardinality($2::text[]) = 0 OR kind = ANY($2))
    ORDER BY lease_until DESC
    LIMIT 1
) IS NOT NULL OR (
    SELECT id FROM operations
    WHERE status = 'pending' AND next_eligible_at <= coalesce($1::timestamptz, now())
      AND (give_up_at IS NULL OR give_up_at >= coalesce($1::timestamptz, now()))
      AND (cardinality($2::text[]) = 0 OR kind = ANY($2))
      AND /*not_held_back*/
    ORDER BY next_eligible_at, id
    LIMIT 1
) IS NOT NULL
