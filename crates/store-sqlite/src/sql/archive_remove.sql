-- Removes one archived operation (?1; its attempts and steps go with it: ON DELETE CASCADE) only
-- while it is as it was read: terminal, same status (?2), last change (?3), attempt count (?4),
-- announcement (?5) and attempt rows (?6); and only when no operation names it as redrive_of, so
-- the lineage never points at nothing (operations_redrive_of makes that an index probe). Runs in
-- the caller's write transaction. Looks the row up by primary key.
DELETE FROM operations
WHERE id = ?1
  AND status IN ('succeeded', 'dead', 'cancelled')
  AND status = ?2
  AND updated_at = ?3
  AND attempt = ?4
  AND alerted_at IS ?5
  AND (SELECT count(*) FROM operation_attempts a WHERE a.operation_id = ?1) = ?6
  AND NOT EXISTS (SELECT 1 FROM operations c WHERE c.redrive_of = ?1)
RETURNING id
