-- Rolling deploy: safe while workers run: a new table that only re-drives of this release read
-- and write; workers never touch it, and the previous release's re-drives ignore it.
-- Re-drive jobs: a re-drive releases its operations at its pace over time, so another process can
-- see it (`oprec redrive status`), ask it to stop (`oprec redrive stop`), and resume it after an
-- interruption (`oprec redrive resume`). The columns mean what they mean on PostgreSQL
-- (migrations/postgres/0017_redrive_jobs.sql). Ids are UUID v7 text, so the primary key lists
-- the newest first.
CREATE TABLE redrive_jobs (
    id                 TEXT        PRIMARY KEY CHECK (length(id) BETWEEN 1 AND 100),
    actor              TEXT        NOT NULL,
    state              TEXT        NOT NULL
        CHECK (state IN ('running', 'stopped', 'interrupted', 'braked', 'failed', 'done')),
    request            TEXT        NOT NULL CHECK (json_valid(request) AND json_type(request) = 'object'),
    ended_before       TEXT        NOT NULL CHECK (ended_before GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9][0-9][0-9][0-9]Z'),
    planned            INTEGER     NOT NULL CHECK (planned >= 0),
    released           INTEGER     NOT NULL CHECK (released >= 0),
    reason             TEXT,
    stop_requested_by  TEXT,
    stop_requested_at  TEXT        CHECK (stop_requested_at GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9][0-9][0-9][0-9]Z'),
    created_at         TEXT        NOT NULL CHECK (created_at GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9][0-9][0-9][0-9]Z'),
    updated_at         TEXT        NOT NULL CHECK (updated_at GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9][0-9][0-9][0-9]Z')
) STRICT;
