-- Up to ?2 dead operations whose announcement is due at ?1 (not announced yet, and not claimed by
-- another announcer, or its claim or retry time has come), oldest promotion first. INDEXED BY
-- operations_dead_unalerted, for the reason given in claim_eligible.sql.
SELECT id FROM operations INDEXED BY operations_dead_unalerted
WHERE status = 'dead' AND alerted_at IS NULL
  AND (alert_due_at IS NULL OR alert_due_at <= ?1)
ORDER BY terminal_at, id
LIMIT ?2
