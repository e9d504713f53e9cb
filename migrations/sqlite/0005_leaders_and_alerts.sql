-- One process of the fleet runs the maintenance loops (scheduler, rescuer, deadline pass,
-- reconcile hand-off, dead-letter announcements): the holder of the named leadership, renewed
-- before its lease runs out and taken over by another process once it has.
CREATE TABLE leaders (
    name         TEXT    PRIMARY KEY CHECK (length(name) BETWEEN 1 AND 200),
    holder       TEXT    NOT NULL CHECK (length(holder) BETWEEN 1 AND 200),
    lease_until  TEXT    NOT NULL CHECK (lease_until GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9][0-9][0-9][0-9]Z'),
    since        TEXT    NOT NULL CHECK (since GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9][0-9][0-9][0-9]Z')
) STRICT;

-- Dead-letter announcements are claimed before they are sent: alert_due_at is when the
-- announcement may next be taken (a claim's end, or a failed announcement's retry time);
-- alert_failures counts failed announcements, for the back-off.
ALTER TABLE operations ADD COLUMN alert_due_at TEXT CHECK (alert_due_at GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9][0-9][0-9][0-9]Z');
ALTER TABLE operations ADD COLUMN alert_failures INTEGER NOT NULL DEFAULT 0 CHECK (alert_failures >= 0);
