-- Operations not yet ended by the age of their creation: created at or after ?1 (an hour ago)
-- are bucket ?4, after ?2 (a day ago) ?5, after ?3 (a week ago) ?6, the rest ?7; the bucket
-- names are core's. Walks operations_status_kind for the four waiting statuses.
SELECT CASE WHEN created_at >= ?1 THEN ?4
            WHEN created_at >= ?2 THEN ?5
            WHEN created_at >= ?3 THEN ?6
            ELSE ?7 END AS k,
       count(*) AS n
FROM operations
WHERE status IN ('pending', 'running', 'reconciling', 'held')
GROUP BY 1
