-- Waiting and running operations counted by the age of their creation time at $1, in the buckets
-- of core's AgeBucket, named as AgeBucket names them ('<1h', '1h-1d', '1d-7d', '>7d'). Reads
-- operations_status_kind (status, kind, id) for the non-terminal rows.
SELECT CASE WHEN created_at >= $1 - interval '1 hour' THEN '<1h'
            WHEN created_at >= $1 - interval '1 day' THEN '1h-1d'
            WHEN created_at >= $1 - interval '7 days' THEN '1d-7d'
            ELSE '>7d' END,
       count(*)
FROM operations
WHERE status IN ('pending', 'running', 'reconciling', 'held')
GROUP BY 1
