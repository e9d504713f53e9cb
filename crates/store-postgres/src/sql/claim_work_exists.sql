-- Whether a worker of kinds $2 (empty: any) has work: an operation of those kinds that is running,
-- or pending, eligible at "now" ($1; NULL: the database's clock), within its deadline and held
-- back by no control. Each arm stops at its first row: running rows through
-- operations_status_kind (status, kind, id), pending ones through operations_pending_eligible.
SELECT EXISTS (
    SELECT 1 FROM operations
    WHERE status = 'running'
      AND (cardinality($2::text[]) = 0 OR kind = ANY($2))
) OR EXISTS (
    SELECT 1 FROM operations
    WHERE status = 'pending' AND next_eligible_at <= coalesce($1::timestamptz, now())
      AND (give_up_at IS NULL OR give_up_at >= coalesce($1::timestamptz, now()))
      AND (cardinality($2::text[]) = 0 OR kind = ANY($2))
      AND /*not_held_back*/
)
