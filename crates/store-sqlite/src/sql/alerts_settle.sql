-- Records how sends went at ?1 (now): ?2 is a JSON array of [id, route, target, error, retry
-- time]; error NULL: accepted (sent), else failed, tried again at the retry time. Walks the
-- primary key once per alert; a row already sent stays sent.
WITH input (alert_id, route, target, error, retry_at) AS MATERIALIZED (
    SELECT value ->> '$[0]', value ->> '$[1]', value ->> '$[2]', value ->> '$[3]',
           value ->> '$[4]'
    FROM json_each(?2)
)
UPDATE alerts
SET route = input.route, target = input.target, tries = tries + 1, last_error = input.error,
    status = CASE WHEN input.error IS NULL THEN 'sent' ELSE 'failed' END,
    sent_at = CASE WHEN input.error IS NULL THEN ?1 END,
    due_at = coalesce(input.retry_at, alerts.due_at)
FROM input
WHERE alerts.id = input.alert_id AND alerts.status <> 'sent'
