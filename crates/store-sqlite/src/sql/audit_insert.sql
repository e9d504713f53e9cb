-- Appends one operator action to the audit log.
INSERT INTO audit_log (at, actor, action, filter, affected, reason, details)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
