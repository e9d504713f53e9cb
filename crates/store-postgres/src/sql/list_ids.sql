-- The ids of the operations of statuses $1, in operations_status_kind's order (status, kind, id):
-- with sorts priced out (FIND_BY_STATUS_INDEX, sql.rs) that index is the only way to read them so
-- ordered, where a planner without statistics would otherwise pick a partial index of terminal
-- rows and read all of them. A listing of few operations (read.rs) pages the ids itself.
SELECT id FROM operations WHERE status = ANY($1::text[]) ORDER BY status, kind, id
