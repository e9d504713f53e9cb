-- Records that announcements failed (?1, a JSON array of [id, retry time] pairs): each may be
-- taken again at its time, and counts one more failure. Walks the primary key once per id; an
-- announcement made meanwhile stays made.
WITH input (op_id, at) AS MATERIALIZED (
    SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]') FROM json_each(?1)
)
UPDATE operations SET alert_due_at = input.at, alert_failures = alert_failures + 1
FROM input
WHERE operations.id = input.op_id AND operations.alerted_at IS NULL
