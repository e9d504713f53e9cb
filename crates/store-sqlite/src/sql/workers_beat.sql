-- Registers a running worker, or refreshes its row; last_seen_at is the store's now (?7). Walks
-- the primary key.
INSERT INTO workers (id, host, pid, kinds, code_version, started_at, last_seen_at)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
ON CONFLICT (id) DO UPDATE
SET host = excluded.host,
    pid = excluded.pid,
    kinds = excluded.kinds,
    code_version = excluded.code_version,
    started_at = excluded.started_at,
    last_seen_at = excluded.last_seen_at
