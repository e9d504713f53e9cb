-- Records that the announcements of $1 failed: each may be taken again at its time in $2, and
-- counts one more failure. Walks the primary key; an announcement made meanwhile stays made.
UPDATE operations o SET alert_due_at = i.at, alert_failures = o.alert_failures + 1
FROM UNNEST($1::uuid[], $2::timestamptz[]) AS i(id, at)
WHERE o.id = i.id AND o.alerted_at IS NULL
