-- Registers worker $2 (host $3, pid $4, kinds $5, code version $6, started at $7) or refreshes its
-- row; last_seen_at = "now" ($1; NULL: the database's clock). Checks the primary key of workers.
INSERT INTO workers (id, host, pid, kinds, code_version, started_at, last_seen_at)
VALUES ($2, $3, $4, $5, $6, $7, coalesce($1::timestamptz, now()))
ON CONFLICT (id) DO UPDATE
SET host = excluded.host, pid = excluded.pid, kinds = excluded.kinds,
    code_version = excluded.code_version, started_at = excluded.started_at,
    last_seen_at = excluded.last_seen_at
