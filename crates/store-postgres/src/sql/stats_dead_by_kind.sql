-- Dead operations counted by kind. Reads operations_status_kind (status, kind, id).
SELECT kind, count(*) FROM operations
WHERE status = 'dead'
GROUP BY kind
