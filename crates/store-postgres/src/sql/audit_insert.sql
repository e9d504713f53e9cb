-- Appends an operator action to the audit log at "now" ($1; NULL: the database's clock): actor
-- $2, action $3, filter $4, how many it touched $5, reason $6, details $7.
INSERT INTO audit_log (at, actor, action, filter, affected, reason, details)
VALUES (coalesce($1::timestamptz, now()), $2, $3, $4, $5, $6, $7)
