-- The workers seen within $2 microseconds of "now" ($1; NULL: the database's clock), by id. Walks
-- workers_last_seen (last_seen_at).
SELECT id, host, pid, kinds, code_version, started_at, last_seen_at
FROM workers
WHERE last_seen_at >= coalesce($1::timestamptz, now()) - $2 * interval '1 microsecond'
ORDER BY id
