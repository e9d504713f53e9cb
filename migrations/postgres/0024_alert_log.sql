-- Rolling deploy: safe while workers run: creates a new table that the previous release's
-- processes never read nor write. Until every process runs this release, a configuration hold
-- or a dependency paused by one is alerted only by the processes that know the table; a
-- previous-release leader keeps announcing promotions to dead as before, without logging them.
--
-- alerts: what the fleet told an owner, to which route, and whether it arrived (README,
-- "Alerts routed to their owner"). One row per subject (the unique key that makes an event one
-- alert across the fleet: `dead:<operation>:<death time>`, `held:<operation>:<attempt>`,
-- `paused:dependency:<name>:<pause time>`). Held and paused alerts are sent from here by the
-- maintenance leader and retried until a route accepts them; dead-letter announcements keep
-- their bookkeeping on the operation (alerted_at) and log each delivery here.
CREATE TABLE alerts (
    id            bigserial   PRIMARY KEY,
    event         text        NOT NULL CHECK (event IN ('dead', 'held', 'paused')),
    subject       text        NOT NULL UNIQUE,
    operation_id  uuid,
    kind          text,
    dependency    text,
    summary       text        NOT NULL,
    next_action   text,
    route         text,
    target        text,
    status        text        NOT NULL CHECK (status IN ('pending', 'sent', 'failed')),
    tries         integer     NOT NULL DEFAULT 0 CHECK (tries >= 0),
    due_at        timestamptz NOT NULL,
    last_error    text,
    source_at     timestamptz NOT NULL,
    created_at    timestamptz NOT NULL,
    sent_at       timestamptz
);
-- The sender walks the unsent holds and pauses by due time (a dead-letter announcement is retried
-- from its operation); the log is listed newest first by id.
CREATE INDEX alerts_unsent ON alerts (due_at, id) WHERE status <> 'sent' AND event <> 'dead';
-- The newest hold recorded: where the next pass starts reading the attempt history.
CREATE INDEX alerts_holds ON alerts (source_at) WHERE event = 'held';
-- Old sent rows are trimmed in the order they were sent.
CREATE INDEX alerts_sent ON alerts (sent_at) WHERE status = 'sent';
