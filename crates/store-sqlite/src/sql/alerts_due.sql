-- Takes up to ?3 recorded alerts due to be sent at ?1, holds and pauses pending or failed (a
-- dead-letter announcement is retried from its operation), oldest due first, until ?2 (now +
-- the sender's lease: another sender takes one only when this one died). Walks alerts_unsent.
UPDATE alerts SET due_at = ?2
WHERE id IN (
    SELECT id FROM alerts
    WHERE status <> 'sent' AND event <> 'dead' AND due_at <= ?1
    ORDER BY due_at, id
    LIMIT ?3
)
RETURNING *
