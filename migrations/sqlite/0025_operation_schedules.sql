-- Rolling deploy: safe while workers run: a new table that only workers of this release write
-- (declaring their kinds' schedules when they start, and, on the maintenance leader, advancing
-- them at each tick) and operators read; the previous release ignores it.
-- One row per scheduled kind; the columns mean what they mean on PostgreSQL
-- (migrations/postgres/0025_operation_schedules.sql).
CREATE TABLE operation_schedules (
    kind               TEXT    PRIMARY KEY CHECK (length(kind) BETWEEN 1 AND 200),
    expression         TEXT    NOT NULL CHECK (length(expression) BETWEEN 1 AND 200),
    timezone           TEXT    NOT NULL CHECK (length(timezone) BETWEEN 1 AND 100),
    missed             TEXT    NOT NULL CHECK (missed IN ('run_once', 'skip')),
    grace_secs         INTEGER NOT NULL CHECK (grace_secs >= 0),
    payload            TEXT    NOT NULL CHECK (json_type(payload) = 'object'),
    declared_at        TEXT    NOT NULL,
    declared_by        TEXT    NOT NULL,
    last_tick          TEXT,
    last_enqueued_tick TEXT,
    last_operation_id  TEXT,
    next_tick          TEXT,
    updated_at         TEXT    NOT NULL
) STRICT;
