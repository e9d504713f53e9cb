-- Operator tools: reconciliation tries, dead-letter alerts, and the indexes their queries use.
ALTER TABLE operations
    ADD COLUMN reconcile_attempts INTEGER NOT NULL DEFAULT 0 CHECK (reconcile_attempts >= 0);
ALTER TABLE operations
    ADD COLUMN alerted_at TEXT CHECK (alerted_at GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9][0-9][0-9][0-9]Z');

-- The reconciler's pick: reconciling rows by their next reconcile time.
CREATE INDEX operations_reconciling_due
    ON operations (next_eligible_at) WHERE status = 'reconciling';

-- Dead-letter review and re-drive by terminal time.
CREATE INDEX operations_terminal_at
    ON operations (terminal_at, id) WHERE status IN ('dead', 'cancelled');

-- Promotions to dead not yet announced to their sink.
CREATE INDEX operations_dead_unalerted
    ON operations (terminal_at) WHERE status = 'dead' AND alerted_at IS NULL;

-- Attempt rate by time.
CREATE INDEX operation_attempts_ended ON operation_attempts (ended_at);
