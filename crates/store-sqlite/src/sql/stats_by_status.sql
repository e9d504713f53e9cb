-- Operations by status. Scans operations_status_kind.
SELECT status AS k, count(*) AS n FROM operations GROUP BY status
