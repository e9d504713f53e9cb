-- The ids of the operations of statuses $1 and kind $2, in operations_status_kind's order
-- (status, kind, id), as list_ids.sql.
SELECT id FROM operations WHERE status = ANY($1::text[]) AND kind = $2 ORDER BY status, kind, id
