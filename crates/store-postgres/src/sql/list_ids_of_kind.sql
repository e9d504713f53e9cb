-- The ids of the operations of statuses $1 and kind $2, in no particular order, as list_ids.sql.
(SELECT id FROM operations
 WHERE status = ANY($1::text[]) AND status NOT IN ('running', 'succeeded', 'cancelled')
   AND kind = $2
 ORDER BY status, kind, id)
UNION ALL
(SELECT id FROM operations
 WHERE status = ANY($1::text[]) AND status IN ('succeeded', 'cancelled') AND kind = $2
 ORDER BY status, kind, terminal_at)
UNION ALL
(SELECT id FROM operations
 WHERE status = 'running' AND 'running' = ANY($1::text[]) AND kind = $2)
