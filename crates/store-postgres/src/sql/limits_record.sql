-- Writes back the windows of recent starts of the locked limits $1 (scopes), $2 (values), $3
-- (core's RateWindow JSON), after the claim that used them, in the same transaction.
UPDATE operation_limits l
SET recent_starts = w.recent_starts
FROM unnest($1::text[], $2::text[], $3::text[]) AS w(scope, value, recent_starts)
WHERE l.scope = w.scope AND l.value = w.value
