-- Dead operations by kind. Walks operations_status_kind for status 'dead'.
SELECT kind AS k, count(*) AS n FROM operations WHERE status = 'dead' GROUP BY kind
