-- Rolling deploy: safe while workers run: a new table that only re-drives of this release read
-- and write; workers never touch it, and the previous release's re-drives ignore it.
-- Re-drive jobs: a re-drive releases its operations at its pace over time, so another process can
-- see it (`oprec redrive status`), ask it to stop (`oprec redrive stop`), and resume it after an
-- interruption (`oprec redrive resume`). The running process saves its row every second or so;
-- a running row not saved for 30 s belongs to a process that is gone.
--   request:           the re-drive as checked (filter, mode, pace, limit, batch, note), for resumption;
--   ended_before:      only operations that ended before this time are re-driven (its dry run's time);
--   reason:            why it ended (stopped, braked, failed), in words;
--   stop_requested_by: who asked it to stop, until it has stopped (cleared when it resumes).
-- Ids are UUID v7 text, so the primary key lists the newest first.
CREATE TABLE redrive_jobs (
    id                 text        PRIMARY KEY CHECK (length(id) BETWEEN 1 AND 100),
    actor              text        NOT NULL,
    state              text        NOT NULL
        CHECK (state IN ('running', 'stopped', 'interrupted', 'braked', 'failed', 'done')),
    request            jsonb       NOT NULL CHECK (jsonb_typeof(request) = 'object'),
    ended_before       timestamptz NOT NULL,
    planned            bigint      NOT NULL CHECK (planned >= 0),
    released           bigint      NOT NULL CHECK (released >= 0),
    reason             text,
    stop_requested_by  text,
    stop_requested_at  timestamptz,
    created_at         timestamptz NOT NULL,
    updated_at         timestamptz NOT NULL
);
