-- Removes up to ?2 alerts sent before ?1, oldest first. Walks alerts_sent.
DELETE FROM alerts WHERE id IN (
    SELECT id FROM alerts
    WHERE status = 'sent' AND sent_at < ?1
    ORDER BY sent_at
    LIMIT ?2
)
