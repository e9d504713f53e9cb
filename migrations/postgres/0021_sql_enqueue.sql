-- Rolling deploy: safe while workers run: a new table (operation_kinds), no lock on
-- operations and no scan; the previous release's workers do not publish to it.
--
-- The enqueue-time part of each kind's policy, as the workers that run the kind last published
-- it: every worker upserts a row per kind it runs when it starts, the latest publication wins.
--   max_attempts:     the policy's attempt bound (the lower of the declared bound and the
--                     schedule's length); NULL when only a deadline bounds the kind;
--   give_up_after_ms: how long after enqueue the kind gives up unless the caller gives a
--                     deadline; NULL for none;
--   first_delay_ms:   the ladder's first rung, the wait before the first attempt;
--   payload_mode:     whether the payload is a snapshot or a reference to current state;
--   dependency:       the named dependency the kind calls, unless the caller names another;
--   published_by, code_version, published_at: the worker that published the row, its
--                     application code version, and when.
CREATE TABLE operation_kinds (
    kind              text        PRIMARY KEY CHECK (length(kind) BETWEEN 1 AND 200),
    max_attempts      integer     CHECK (max_attempts > 0),
    give_up_after_ms  bigint      CHECK (give_up_after_ms > 0),
    first_delay_ms    bigint      NOT NULL CHECK (first_delay_ms >= 0),
    payload_mode      text        NOT NULL CHECK (payload_mode IN ('snapshot', 'reference')),
    dependency        text,
    published_by      text        NOT NULL,
    code_version      text,
    published_at      timestamptz NOT NULL
);
