-- Operations counted by status. Reads operations_status_kind (status, kind, id).
SELECT status, count(*) FROM operations GROUP BY status
