-- Running workers and the kinds they handle: each worker upserts its row at start and on every
-- heartbeat and deletes it on a clean shutdown; a row not refreshed for a minute is a worker
-- that is gone. Stats compare pending operations' kinds with the live rows' kinds, so work of
-- a kind no running worker knows shows as unhandled instead of waiting unseen.
CREATE TABLE workers (
    id            text        PRIMARY KEY CHECK (length(id) BETWEEN 1 AND 200),
    host          text        NOT NULL,
    pid           bigint      NOT NULL CHECK (pid >= 0),
    kinds         text[]      NOT NULL,
    code_version  text,
    started_at    timestamptz NOT NULL,
    last_seen_at  timestamptz NOT NULL
);

CREATE INDEX workers_last_seen ON workers (last_seen_at);
