-- The operation record: one row per business operation. Operators write SQL against this table,
-- so its name, its columns and the status names are a contract.
--
-- SQLite has no uuid, jsonb or timestamptz types, so the tables are STRICT and CHECKs hold the
-- stored shapes that the PostgreSQL types hold there:
--   * UUIDs are hyphenated lowercase TEXT (36 characters), so text order is id order;
--   * JSON is TEXT that json_valid() accepts;
--   * times are UTC TEXT in one fixed-width format, 2026-01-05T09:00:00.000000Z, so comparing the
--     strings compares the times. A hand-written UPDATE using datetime('now') (which writes
--     '2026-01-05 09:00:00') would silently break that order, and is refused here instead.
CREATE TABLE operations (
    id                 TEXT        PRIMARY KEY CHECK (length(id) = 36 AND id NOT GLOB '*[^0-9a-f-]*'),
    kind               TEXT        NOT NULL CHECK (length(kind) BETWEEN 1 AND 200),
    idempotency_key    TEXT        CHECK (length(idempotency_key) BETWEEN 1 AND 1000),
    payload            TEXT        NOT NULL CHECK (json_valid(payload)),
    status             TEXT        NOT NULL DEFAULT 'pending' CHECK (status IN
                           ('pending', 'running', 'reconciling', 'held', 'succeeded', 'dead', 'cancelled')),
    attempt            INTEGER     NOT NULL DEFAULT 0 CHECK (attempt >= 0),
    max_attempts       INTEGER     CHECK (max_attempts > 0),
    next_eligible_at   TEXT        NOT NULL CHECK (next_eligible_at GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9][0-9][0-9][0-9]Z'),
    give_up_at         TEXT        CHECK (give_up_at GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9][0-9][0-9][0-9]Z'),
    lease_until        TEXT        CHECK (lease_until GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9][0-9][0-9][0-9]Z'),
    claim_token        TEXT        CHECK (length(claim_token) = 36 AND claim_token NOT GLOB '*[^0-9a-f-]*'),
    claimed_at         TEXT        CHECK (claimed_at GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9][0-9][0-9][0-9]Z'),
    worker_id          TEXT,
    last_failure_class TEXT        CHECK (last_failure_class IN
                           ('transient', 'rate_limited', 'backpressure', 'permanent', 'configuration', 'unknown')),
    last_error         TEXT        CHECK (last_error IS NULL OR (json_valid(last_error) AND json_type(last_error) = 'object')),
    remote_id          TEXT,
    dependency         TEXT,
    terminal_reason    TEXT        CHECK (terminal_reason IN
                           ('permanent', 'attempts_exhausted', 'deadline_passed', 'crash_loop', 'operator', 'obsolete')),
    code_version       TEXT,
    enqueue_params     TEXT        NOT NULL DEFAULT '{}' CHECK (json_valid(enqueue_params)),
    redrive_of         TEXT        REFERENCES operations (id),
    redrive_count      INTEGER     NOT NULL DEFAULT 0 CHECK (redrive_count >= 0),
    vanished_streak    INTEGER     NOT NULL DEFAULT 0 CHECK (vanished_streak >= 0),
    last_woken_at      TEXT        CHECK (last_woken_at GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9][0-9][0-9][0-9]Z'),
    created_at         TEXT        NOT NULL CHECK (created_at GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9][0-9][0-9][0-9]Z'),
    updated_at         TEXT        NOT NULL CHECK (updated_at GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9][0-9][0-9][0-9]Z'),
    terminal_at        TEXT        CHECK (terminal_at GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9][0-9][0-9][0-9]Z'),
    -- A running operation always has its claim; a terminal one always says when it ended.
    CHECK ((status = 'running') = (claim_token IS NOT NULL AND lease_until IS NOT NULL)),
    CHECK ((status IN ('succeeded', 'dead', 'cancelled')) = (terminal_at IS NOT NULL)),
    CHECK (status <> 'dead' OR terminal_reason IS NOT NULL)
) STRICT;

-- Enqueueing the same key for the same kind returns the existing operation.
CREATE UNIQUE INDEX operations_kind_idempotency_key
    ON operations (kind, idempotency_key) WHERE idempotency_key IS NOT NULL;

-- The claim's index: only eligible-to-be pending rows, so its cost does not grow with finished rows.
CREATE INDEX operations_pending_eligible
    ON operations (next_eligible_at, id) WHERE status = 'pending';

-- The rescuer's index: running rows by lease end.
CREATE INDEX operations_running_lease
    ON operations (lease_until) WHERE status = 'running';

-- Deadlines of waiting rows.
CREATE INDEX operations_waiting_deadline
    ON operations (give_up_at) WHERE status IN ('pending', 'held') AND give_up_at IS NOT NULL;

-- Listing and dead-letter review by kind and status.
CREATE INDEX operations_status_kind ON operations (status, kind, id);

-- One row per claim, written when the attempt ends (the rescuer writes vanished ones).
CREATE TABLE operation_attempts (
    id             INTEGER     PRIMARY KEY AUTOINCREMENT,
    operation_id   TEXT        NOT NULL REFERENCES operations (id) ON DELETE CASCADE,
    attempt        INTEGER     NOT NULL CHECK (attempt > 0),
    claimed_at     TEXT        NOT NULL CHECK (claimed_at GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9][0-9][0-9][0-9]Z'),
    ended_at       TEXT        NOT NULL CHECK (ended_at GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9][0-9][0-9][0-9]Z'),
    outcome        TEXT        NOT NULL CHECK (outcome IN
                       ('succeeded', 'error', 'rejected', 'vanished', 'released', 'snoozed', 'unknown')),
    failure_class  TEXT        CHECK (failure_class IN
                       ('transient', 'rate_limited', 'backpressure', 'permanent', 'configuration', 'unknown')),
    error          TEXT        CHECK (error IS NULL OR (json_valid(error) AND json_type(error) = 'object')),
    worker_id      TEXT,
    code_version   TEXT
) STRICT;
CREATE INDEX operation_attempts_operation ON operation_attempts (operation_id, id);

-- Durable step checkpoints: a retry resumes after the last completed step.
CREATE TABLE operation_steps (
    operation_id  TEXT        NOT NULL REFERENCES operations (id) ON DELETE CASCADE,
    name          TEXT        NOT NULL,
    output        TEXT        NOT NULL CHECK (json_valid(output)),
    attempt       INTEGER     NOT NULL,
    completed_at  TEXT        NOT NULL CHECK (completed_at GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9][0-9][0-9][0-9]Z'),
    PRIMARY KEY (operation_id, name)
) STRICT;

-- Pauses and postponements by kind, failure class or dependency.
CREATE TABLE controls (
    id          INTEGER     PRIMARY KEY AUTOINCREMENT,
    scope       TEXT        NOT NULL CHECK (scope IN ('kind', 'failure_class', 'dependency')),
    value       TEXT        NOT NULL,
    action      TEXT        NOT NULL CHECK (action IN ('pause', 'postpone')),
    until       TEXT        CHECK (until GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9][0-9][0-9][0-9]Z'),
    reason      TEXT,
    actor       TEXT        NOT NULL,
    created_at  TEXT        NOT NULL CHECK (created_at GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9][0-9][0-9][0-9]Z')
) STRICT;
CREATE UNIQUE INDEX controls_scope_value ON controls (scope, value);

-- Every operator action: who, when, what filter, how many, why.
CREATE TABLE audit_log (
    id          INTEGER     PRIMARY KEY AUTOINCREMENT,
    at          TEXT        NOT NULL CHECK (at GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9][0-9][0-9][0-9]Z'),
    actor       TEXT        NOT NULL,
    action      TEXT        NOT NULL,
    filter      TEXT        NOT NULL DEFAULT '{}' CHECK (json_valid(filter)),
    affected    INTEGER     NOT NULL DEFAULT 0,
    reason      TEXT,
    details     TEXT        NOT NULL DEFAULT '{}' CHECK (json_valid(details))
) STRICT;
