-- Records alerts, one per subject, at ?1 (now): ?2 is a JSON array of alert objects. A subject
-- recorded before is left as it was, unless the alert carries a delivery (route not NULL: a
-- dead-letter announcement tried by its own bookkeeping), whose outcome updates the row
-- (status, tries, route, target, error, sent time). Returns the rows recorded now or updated.
-- Walks the unique index on subject once per alert.
WITH input AS MATERIALIZED (
    SELECT value ->> 'event' AS event, value ->> 'subject' AS subject,
           value ->> 'operation_id' AS operation_id, value ->> 'kind' AS kind,
           value ->> 'dependency' AS dependency, value ->> 'summary' AS summary,
           value ->> 'next_action' AS next_action, value ->> 'source_at' AS source_at,
           value ->> 'route' AS route, value ->> 'target' AS target,
           value ->> 'error' AS error, value ->> 'retry_at' AS retry_at
    FROM json_each(?2)
)
INSERT INTO alerts AS a (event, subject, operation_id, kind, dependency, summary, next_action,
                         source_at, route, target, status, tries, due_at, last_error,
                         created_at, sent_at)
SELECT event, subject, operation_id, kind, dependency, summary, next_action, source_at, route,
       target,
       CASE WHEN route IS NULL THEN 'pending' WHEN error IS NULL THEN 'sent' ELSE 'failed' END,
       CASE WHEN route IS NULL THEN 0 ELSE 1 END,
       coalesce(retry_at, ?1), error, ?1,
       CASE WHEN route IS NOT NULL AND error IS NULL THEN ?1 END
FROM input WHERE true
ON CONFLICT (subject) DO UPDATE
SET status = excluded.status, tries = a.tries + 1, route = excluded.route,
    target = excluded.target, last_error = excluded.last_error, due_at = excluded.due_at,
    sent_at = excluded.sent_at
WHERE excluded.route IS NOT NULL AND a.status <> 'sent'
RETURNING *
