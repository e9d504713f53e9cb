-- Re-drive jobs, newest first (ids are UUID v7 text), or only job $1 when given; at most $2.
-- Walks the primary key backwards.
SELECT j.* FROM redrive_jobs j
WHERE $1::text IS NULL OR j.id = $1
ORDER BY j.id DESC
LIMIT $2
