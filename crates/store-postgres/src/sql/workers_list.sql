-- The workers seen within $2 microseconds of "now" ($1; NULL: the database's clock), by id, each
-- with whether it holds a leadership now. Walks workers_last_seen (last_seen_at).
SELECT w.id, w.host, w.pid, w.kinds, w.code_version, w.started_at, w.last_seen_at,
       EXISTS (SELECT 1 FROM leaders l
               WHERE l.holder = w.id AND l.lease_until > coalesce($1::timestamptz, now()))
           AS leader
FROM workers w
WHERE w.last_seen_at >= coalesce($1::timestamptz, now()) - $2 * interval '1 microsecond'
ORDER BY w.id
