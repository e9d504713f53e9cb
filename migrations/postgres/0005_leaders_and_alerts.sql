-- One process of the fleet runs the maintenance loops (scheduler, rescuer, deadline pass,
-- reconcile hand-off, dead-letter announcements): the holder of the named leadership, renewed
-- before its lease runs out and taken over by another process once it has.
CREATE TABLE leaders (
    name         text        PRIMARY KEY CHECK (length(name) BETWEEN 1 AND 200),
    holder       text        NOT NULL CHECK (length(holder) BETWEEN 1 AND 200),
    lease_until  timestamptz NOT NULL,
    since        timestamptz NOT NULL
);

-- Dead-letter announcements are claimed before they are sent: alert_due_at is when the
-- announcement may next be taken (a claim's end, or a failed announcement's retry time);
-- alert_failures counts failed announcements, for the back-off.
ALTER TABLE operations
    ADD COLUMN alert_due_at timestamptz,
    ADD COLUMN alert_failures integer NOT NULL DEFAULT 0 CHECK (alert_failures >= 0);
