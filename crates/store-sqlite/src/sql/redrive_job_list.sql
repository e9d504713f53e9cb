-- Re-drive jobs, newest first (ids are UUID v7 text), or only job ?1 when given; at most ?2.
-- Walks the primary key backwards.
SELECT * FROM redrive_jobs
WHERE ?1 IS NULL OR id = ?1
ORDER BY id DESC
LIMIT ?2
