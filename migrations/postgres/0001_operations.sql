-- The operation record: one row per business operation. Operators write SQL against this table,
-- so its name, its columns and the status names are a contract.
CREATE TABLE operations (
    id                 uuid        PRIMARY KEY,
    kind               text        NOT NULL CHECK (length(kind) BETWEEN 1 AND 200),
    idempotency_key    text        CHECK (length(idempotency_key) BETWEEN 1 AND 1000),
    payload            jsonb       NOT NULL,
    status             text        NOT NULL DEFAULT 'pending' CHECK (status IN
                           ('pending', 'running', 'reconciling', 'held', 'succeeded', 'dead', 'cancelled')),
    attempt            integer     NOT NULL DEFAULT 0 CHECK (attempt >= 0),
    max_attempts       integer     CHECK (max_attempts > 0),
    next_eligible_at   timestamptz NOT NULL,
    give_up_at         timestamptz,
    lease_until        timestamptz,
    claim_token        uuid,
    claimed_at         timestamptz,
    worker_id          text,
    last_failure_class text        CHECK (last_failure_class IN
                           ('transient', 'rate_limited', 'backpressure', 'permanent', 'configuration', 'unknown')),
    last_error         jsonb,
    remote_id          text,
    dependency         text,
    terminal_reason    text        CHECK (terminal_reason IN
                           ('permanent', 'attempts_exhausted', 'deadline_passed', 'crash_loop', 'operator', 'obsolete')),
    code_version       text,
    enqueue_params     jsonb       NOT NULL DEFAULT '{}'::jsonb,
    redrive_of         uuid        REFERENCES operations (id),
    redrive_count      integer     NOT NULL DEFAULT 0 CHECK (redrive_count >= 0),
    vanished_streak    integer     NOT NULL DEFAULT 0 CHECK (vanished_streak >= 0),
    last_woken_at      timestamptz,
    created_at         timestamptz NOT NULL,
    updated_at         timestamptz NOT NULL,
    terminal_at        timestamptz,
    -- A running operation always has its claim; a terminal one always says when it ended.
    CHECK ((status = 'running') = (claim_token IS NOT NULL AND lease_until IS NOT NULL)),
    CHECK ((status IN ('succeeded', 'dead', 'cancelled')) = (terminal_at IS NOT NULL)),
    CHECK (status <> 'dead' OR terminal_reason IS NOT NULL)
);

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
    id             bigserial   PRIMARY KEY,
    operation_id   uuid        NOT NULL REFERENCES operations (id) ON DELETE CASCADE,
    attempt        integer     NOT NULL CHECK (attempt > 0),
    claimed_at     timestamptz NOT NULL,
    ended_at       timestamptz NOT NULL,
    outcome        text        NOT NULL CHECK (outcome IN
                       ('succeeded', 'error', 'rejected', 'vanished', 'released', 'snoozed', 'unknown')),
    failure_class  text        CHECK (failure_class IN
                       ('transient', 'rate_limited', 'backpressure', 'permanent', 'configuration', 'unknown')),
    error          jsonb,
    worker_id      text,
    code_version   text
);
CREATE INDEX operation_attempts_operation ON operation_attempts (operation_id, id);

-- Durable step checkpoints: a retry resumes after the last completed step.
CREATE TABLE operation_steps (
    operation_id  uuid        NOT NULL REFERENCES operations (id) ON DELETE CASCADE,
    name          text        NOT NULL,
    output        jsonb       NOT NULL,
    attempt       integer     NOT NULL,
    completed_at  timestamptz NOT NULL,
    PRIMARY KEY (operation_id, name)
);

-- Pauses and postponements by kind, failure class or dependency.
CREATE TABLE controls (
    id          bigserial   PRIMARY KEY,
    scope       text        NOT NULL CHECK (scope IN ('kind', 'failure_class', 'dependency')),
    value       text        NOT NULL,
    action      text        NOT NULL CHECK (action IN ('pause', 'postpone')),
    until       timestamptz,
    reason      text,
    actor       text        NOT NULL,
    created_at  timestamptz NOT NULL
);
CREATE UNIQUE INDEX controls_scope_value ON controls (scope, value);

-- Every operator action: who, when, what filter, how many, why.
CREATE TABLE audit_log (
    id          bigserial   PRIMARY KEY,
    at          timestamptz NOT NULL,
    actor       text        NOT NULL,
    action      text        NOT NULL,
    filter      jsonb       NOT NULL DEFAULT '{}'::jsonb,
    affected    bigint      NOT NULL DEFAULT 0,
    reason      text,
    details     jsonb       NOT NULL DEFAULT '{}'::jsonb
);
