-- Running workers and the kinds they handle: each worker upserts its row at start and on every
-- heartbeat and deletes it on a clean shutdown; a row not refreshed for a minute is a worker
-- that is gone. Stats compare pending operations' kinds with the live rows' kinds, so work of
-- a kind no running worker knows shows as unhandled instead of waiting unseen.
CREATE TABLE workers (
    id            TEXT        PRIMARY KEY CHECK (length(id) BETWEEN 1 AND 200),
    host          TEXT        NOT NULL,
    pid           INTEGER     NOT NULL CHECK (pid >= 0),
    kinds         TEXT        NOT NULL CHECK (json_valid(kinds) AND json_type(kinds) = 'array'),
    code_version  TEXT,
    started_at    TEXT        NOT NULL CHECK (started_at GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9][0-9][0-9][0-9]Z'),
    last_seen_at  TEXT        NOT NULL CHECK (last_seen_at GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9][0-9][0-9][0-9]Z')
) STRICT;

CREATE INDEX workers_last_seen ON workers (last_seen_at);
