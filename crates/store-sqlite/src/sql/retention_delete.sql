-- Removes up to ?5 operations finished in status ?3 before ?4, of the kinds in the JSON array
-- ?1 (with ?2 = 1: of every kind but those), oldest first, with their attempts and steps (ON
-- DELETE CASCADE). Only succeeded and cancelled operations can match, whatever ?3 says. An
-- operation a re-drive names (redrive_of) stays while the re-drive does. Walks
-- operations_finished_at (terminal_at) and stops at the cutoff or after ?5 rows.
DELETE FROM operations
WHERE id IN (SELECT o.id FROM operations AS o INDEXED BY operations_finished_at
             WHERE o.status IN ('succeeded', 'cancelled') AND o.status = ?3
               AND o.terminal_at < ?4
               AND (o.kind IN (SELECT value FROM json_each(?1))) = (?2 = 0)
               AND NOT EXISTS (SELECT 1 FROM operations AS r WHERE r.redrive_of = o.id)
             ORDER BY o.terminal_at
             LIMIT ?5)
  AND status = ?3 AND terminal_at < ?4
