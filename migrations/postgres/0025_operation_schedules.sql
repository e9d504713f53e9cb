-- Rolling deploy: safe while workers run: a new table that only workers of this release write
-- (declaring their kinds' schedules when they start, and, on the maintenance leader, advancing
-- them at each tick) and operators read; no lock on operations and no scan. The previous
-- release's workers ignore it: while the maintenance leader is a previous-release process, no
-- scheduled operation is enqueued; the first leader of this release handles the ticks missed
-- meanwhile by each schedule's missed-tick rule.

-- One row per scheduled kind (README, "Recurring operations"):
--   expression, timezone: the cron expression as declared (5 fields: second 0) and the IANA
--                     zone it is read in;
--   missed:           what ticks missed while nothing ran make: run_once (one operation, for
--                     the latest) or skip (none);
--   grace_secs:       how late a tick may be seen and still run as itself;
--   payload:          the fixed payload (the tick is added to each operation's);
--   declared_at, declared_by: when the schedule was first declared (no tick before it runs)
--                     and the worker that declared it last;
--   last_tick:        the latest tick handled (enqueued, or dropped by the missed rule);
--   last_enqueued_tick, last_operation_id: the latest tick enqueued and its operation (the
--                     idempotency key schedule:<tick in RFC 3339, UTC>);
--   next_tick, updated_at: the next tick as last computed, and when the row last changed.
CREATE TABLE operation_schedules (
    kind               text        PRIMARY KEY CHECK (length(kind) BETWEEN 1 AND 200),
    expression         text        NOT NULL CHECK (length(expression) BETWEEN 1 AND 200),
    timezone           text        NOT NULL CHECK (length(timezone) BETWEEN 1 AND 100),
    missed             text        NOT NULL CHECK (missed IN ('run_once', 'skip')),
    grace_secs         bigint      NOT NULL CHECK (grace_secs >= 0),
    payload            jsonb       NOT NULL CHECK (jsonb_typeof(payload) = 'object'),
    declared_at        timestamptz NOT NULL,
    declared_by        text        NOT NULL,
    last_tick          timestamptz,
    last_enqueued_tick timestamptz,
    last_operation_id  uuid,
    next_tick          timestamptz,
    updated_at         timestamptz NOT NULL
);
