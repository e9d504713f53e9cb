-- Records alerts, one per subject, at "now" ($1; NULL: the database's clock): $2.. are arrays,
-- one element per alert. A subject recorded before is left as it was, unless the alert carries a
-- delivery ($11 route not NULL: a dead-letter announcement tried by its own bookkeeping), whose
-- outcome updates the row (status, tries, route, target, error, sent time). Returns the rows
-- recorded now or updated. Walks the unique index on subject.
WITH now AS (SELECT coalesce($1::timestamptz, now()) AS t)
INSERT INTO alerts AS a (event, subject, operation_id, kind, dependency, summary, next_action,
                         source_at, route, target, status, tries, due_at, last_error,
                         created_at, sent_at)
SELECT i.event, i.subject, i.operation_id, i.kind, i.dependency, i.summary, i.next_action,
       i.source_at, i.route, i.target,
       CASE WHEN i.route IS NULL THEN 'pending' WHEN i.error IS NULL THEN 'sent' ELSE 'failed' END,
       CASE WHEN i.route IS NULL THEN 0 ELSE 1 END,
       coalesce(i.retry_at, now.t), i.error, now.t,
       CASE WHEN i.route IS NOT NULL AND i.error IS NULL THEN now.t END
FROM UNNEST($2::text[], $3::text[], $4::uuid[], $5::text[], $6::text[], $7::text[], $8::text[],
            $9::timestamptz[], $10::text[], $11::text[], $12::text[], $13::timestamptz[])
         AS i(event, subject, operation_id, kind, dependency, summary, next_action, source_at,
              target, route, error, retry_at),
     now
ON CONFLICT (subject) DO UPDATE
SET status = excluded.status, tries = a.tries + 1, route = excluded.route,
    target = excluded.target, last_error = excluded.last_error, due_at = excluded.due_at,
    sent_at = excluded.sent_at
WHERE excluded.route IS NOT NULL AND a.status <> 'sent'
RETURNING a.*
