-- Whether a suspect of the worker's kinds ($2; empty: any) waits, pending, eligible, within its
-- deadline and held back by no control: the workers' probe, run every second or so beside the
-- claims, never in them. $1 is "now" (NULL: the database's clock). Walks the partial index
-- operations_pending_suspect, empty unless a worker died with work in flight.
SELECT EXISTS (
    SELECT 1 FROM operations
    WHERE status = 'pending' AND suspect
      AND next_eligible_at <= coalesce($1::timestamptz, now())
      AND (give_up_at IS NULL OR give_up_at >= coalesce($1::timestamptz, now()))
      AND (cardinality($2::text[]) = 0 OR kind = ANY($2))
      AND /*not_held_back*/
)
