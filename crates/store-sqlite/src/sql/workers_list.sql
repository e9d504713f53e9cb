-- The workers seen at or after ?1, by id, each with whether it holds a leadership at ?2 (now).
-- Scans workers in id order: a handful of rows.
SELECT w.id, w.host, w.pid, w.kinds, w.code_version, w.started_at, w.last_seen_at,
       EXISTS (SELECT 1 FROM leaders l WHERE l.holder = w.id AND l.lease_until > ?2) AS leader
FROM workers w
WHERE w.last_seen_at >= ?1
ORDER BY w.id
