-- Rolling deploy: safe while workers run: defaulted columns only (no rewrite, no scan). Workers of
-- the previous release neither read nor set them: their claims may take a suspect beside other
-- work, as before this migration. The suspects' index is built concurrently by 0012.
-- Suspect isolation. An operation whose attempt vanished (its worker died, was killed or stalled
-- with the operation in flight) is a suspect: it may have killed its worker, or it may be an
-- innocent neighbour of the one that did. A suspect is claimed only alone (a worker runs nothing
-- else while it runs), so that its next attempt tells which: only vanished attempts that ran
-- isolated count toward the crash loop. Any other end of an isolated attempt clears the flag.
--   suspect:  the operation waits for an isolated attempt.
--   isolated: the current (or last) claim runs alone; copied into the attempt row at its end.
ALTER TABLE operations ADD COLUMN suspect  boolean NOT NULL DEFAULT false;
ALTER TABLE operations ADD COLUMN isolated boolean NOT NULL DEFAULT false;
ALTER TABLE operation_attempts ADD COLUMN isolated boolean NOT NULL DEFAULT false;

-- Backpressure snoozes refund their attempt, so they are bounded by a budget of their own: the
-- snoozes this operation has taken (a re-drive starts it again).
ALTER TABLE operations ADD COLUMN snoozes integer NOT NULL DEFAULT 0 CHECK (snoozes >= 0);

-- Unrecognised errors (and timeouts of external-I/O kinds) retried automatically, for kinds
-- whose remote side honours the effect key: a small budget of their own before reconciling.
ALTER TABLE operations ADD COLUMN unknowns integer NOT NULL DEFAULT 0 CHECK (unknowns >= 0);

-- A completion refused by the fence (its claim was taken over: the lease expired and the
-- rescuer recorded the attempt vanished, or an operator ended it) is written to the history of
-- the attempt it belongs to, found by its claim token among that operation's attempts (through
-- operation_attempts_operation: no index of its own, so a completion writes no extra entry).
ALTER TABLE operation_attempts ADD COLUMN claim_token uuid;
ALTER TABLE operation_attempts ADD COLUMN stale_outcome text CHECK (stale_outcome IN
    ('succeeded', 'error', 'rejected', 'vanished', 'released', 'snoozed', 'unknown'));
ALTER TABLE operation_attempts ADD COLUMN stale_at timestamptz;
