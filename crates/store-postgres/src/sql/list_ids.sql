-- The ids of the operations of statuses $1, in no particular order (the caller sorts them), each
-- group through the index that holds it, asked in that index's order so that, with sorts priced
-- out (FIND_BY_STATUS_INDEX, sql.rs), it is the only way to read them (a planner without
-- statistics would otherwise pick a partial index of terminal rows and read all of them): the
-- waiting and dead ones from operations_status_kind_waiting_or_dead (status, kind, id), the
-- succeeded and cancelled ones from operations_finished_kind (status, kind, terminal_at), the
-- running ones (a fleet's claims, never more) from operations_running_lease. A listing of few
-- operations (read.rs) pages the ids itself.
(SELECT id FROM operations
 WHERE status = ANY($1::text[]) AND status NOT IN ('running', 'succeeded', 'cancelled')
 ORDER BY status, kind, id)
UNION ALL
(SELECT id FROM operations
 WHERE status = ANY($1::text[]) AND status IN ('succeeded', 'cancelled')
 ORDER BY status, kind, terminal_at)
UNION ALL
(SELECT id FROM operations
 WHERE status = 'running' AND 'running' = ANY($1::text[]))
