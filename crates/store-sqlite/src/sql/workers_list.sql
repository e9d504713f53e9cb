-- The workers seen at or after ?1, by id. Scans workers in id order: a handful of rows.
SELECT id, host, pid, kinds, code_version, started_at, last_seen_at
FROM workers
WHERE last_seen_at >= ?1
ORDER BY id
