-- Rolling deploy: safe while workers run: a new table that only workers of this release write
-- (when they start) and operators read; the previous release ignores it.
-- The enqueue-time part of each kind's policy, as the workers that run it last published it
-- (every worker upserts a row per kind it runs when it starts; the latest publication wins).
-- The columns mean what they mean on PostgreSQL (migrations/postgres/0021_sql_enqueue.sql),
-- where the schema's oprec_enqueue() reads them to enqueue from SQL; SQLite has no such
-- function, and keeps the table so that both stores answer the same questions.
CREATE TABLE operation_kinds (
    kind              TEXT        PRIMARY KEY CHECK (length(kind) BETWEEN 1 AND 200),
    max_attempts      INTEGER     CHECK (max_attempts > 0),
    give_up_after_ms  INTEGER     CHECK (give_up_after_ms > 0),
    first_delay_ms    INTEGER     NOT NULL CHECK (first_delay_ms >= 0),
    payload_mode      TEXT        NOT NULL CHECK (payload_mode IN ('snapshot', 'reference')),
    dependency        TEXT,
    published_by      TEXT        NOT NULL,
    code_version      TEXT,
    published_at      TEXT        NOT NULL CHECK (published_at GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9][0-9][0-9][0-9]Z')
) STRICT;
