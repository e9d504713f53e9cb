-- Records how sends went at "now" ($1; NULL: the database's clock): for each alert $2, its route
-- $3 and target $4; $5 NULL: accepted (sent), else the error, tried again at $6. Walks the
-- primary key; a row already sent stays sent.
WITH now AS (SELECT coalesce($1::timestamptz, now()) AS t)
UPDATE alerts a
SET route = i.route, target = i.target, tries = a.tries + 1, last_error = i.error,
    status = CASE WHEN i.error IS NULL THEN 'sent' ELSE 'failed' END,
    sent_at = CASE WHEN i.error IS NULL THEN now.t END,
    due_at = coalesce(i.retry_at, a.due_at)
FROM UNNEST($2::int8[], $3::text[], $4::text[], $5::text[], $6::timestamptz[])
         AS i(id, route, target, error, retry_at),
     now
WHERE a.id = i.id AND a.status <> 'sent'
