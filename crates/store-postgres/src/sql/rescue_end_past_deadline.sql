-- Ends up to $2 pending or held operations whose deadline passed before "now" ($1; NULL: the
-- database's clock), earliest deadline first, skipping rows another transaction holds, with the
-- ending core decided: status $3, terminal reason $4, terminal_at set when $5 (the status is
-- terminal), and last_error patched by ErrorPatch's rule (the stored summary kept, or $6 when
-- there was no error; decision $7 and next action $8 replaced; every other key kept). Walks the
-- partial index operations_waiting_deadline (give_up_at).
WITH now AS (SELECT coalesce($1::timestamptz, now()) AS t),
picked AS (
    SELECT id AS pid FROM operations, now
    WHERE status IN ('pending', 'held') AND give_up_at < now.t
    ORDER BY give_up_at
    LIMIT $2
    FOR UPDATE OF operations SKIP LOCKED
)
UPDATE operations o
SET status = $3, terminal_reason = $4, terminal_at = CASE WHEN $5 THEN now.t END,
    updated_at = now.t,
    last_error = jsonb_build_object('summary', $6::text)
        || coalesce(o.last_error, '{}'::jsonb)
        || jsonb_build_object('decision', $7::text, 'next_action', $8::text)
FROM picked, now
WHERE o.id = picked.pid
