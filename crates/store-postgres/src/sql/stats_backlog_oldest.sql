-- The creation time of the oldest waiting or running operation. Reads operations_status_kind
-- (status, kind, id) for the non-terminal rows.
SELECT min(created_at) FROM operations
WHERE status IN ('pending', 'running', 'reconciling', 'held')
