-- Rolling deploy: safe while workers run: creates a new table and a partial index on
-- operation_attempts that the previous release's processes never read (the index is built under
-- the write lock, as every SQLite migration is: writers wait for it, a partial index of the
-- attempts that failed for configuration, which are few). Until every process runs this
-- release, a configuration hold or a dependency paused by one is alerted only by the processes
-- that know the table; a previous-release leader keeps announcing promotions to dead as before,
-- without logging them.
--
-- alerts: what the fleet told an owner, to which route, and whether it arrived (README,
-- "Alerts routed to their owner"). One row per subject (the unique key that makes an event one
-- alert across the fleet: `dead:<operation>:<death time>`, `held:<operation>:<attempt>`,
-- `paused:dependency:<name>:<pause time>`). Held and paused alerts are sent from here by the
-- maintenance leader and retried until a route accepts them; dead-letter announcements keep
-- their bookkeeping on the operation (alerted_at) and log each delivery here.
CREATE TABLE alerts (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    event         TEXT    NOT NULL CHECK (event IN ('dead', 'held', 'paused')),
    subject       TEXT    NOT NULL UNIQUE,
    operation_id  TEXT,
    kind          TEXT,
    dependency    TEXT,
    summary       TEXT    NOT NULL,
    next_action   TEXT,
    route         TEXT,
    target        TEXT,
    status        TEXT    NOT NULL CHECK (status IN ('pending', 'sent', 'failed')),
    tries         INTEGER NOT NULL DEFAULT 0 CHECK (tries >= 0),
    due_at        TEXT    NOT NULL CHECK (due_at GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9][0-9][0-9][0-9]Z'),
    last_error    TEXT,
    source_at     TEXT    NOT NULL CHECK (source_at GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9][0-9][0-9][0-9]Z'),
    created_at    TEXT    NOT NULL CHECK (created_at GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9][0-9][0-9][0-9]Z'),
    sent_at       TEXT    CHECK (sent_at GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9][0-9][0-9][0-9]Z')
) STRICT;
-- The sender walks the unsent holds and pauses by due time (a dead-letter announcement is retried
-- from its operation); the log is listed newest first by id.
CREATE INDEX alerts_unsent ON alerts (due_at, id) WHERE status <> 'sent' AND event <> 'dead';
-- The newest hold recorded: where the next pass starts reading the attempt history.
CREATE INDEX alerts_holds ON alerts (source_at) WHERE event = 'held';
-- Old sent rows are trimmed in the order they were sent.
CREATE INDEX alerts_sent ON alerts (sent_at) WHERE status = 'sent';

-- The attempts that failed for configuration (rejected credentials: the operation is held for
-- its owner), by the time they ended: the maintenance leader reads the ones newer than the last
-- it alerted, so each pass reads only new holds, never the attempt history.
CREATE INDEX operation_attempts_configuration
    ON operation_attempts (ended_at) WHERE failure_class = 'configuration';
