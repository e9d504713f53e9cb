-- The ids of the operations of statuses $1, through operations_status_kind (status, kind, id),
-- unordered: a listing of few operations (read.rs) orders and pages them.
SELECT id FROM operations WHERE status = ANY($1::text[])
