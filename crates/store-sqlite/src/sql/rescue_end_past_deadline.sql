-- Ends up to ?8 pending and held operations whose deadline passed before ?1, the longest past
-- first, with the ending core decided: status ?2, terminal reason ?3, terminal at ?4, and
-- last_error patched (the summary kept, or ?5 when there was no error; decision ?6 and next
-- action ?7 replaced; every other key kept). One statement, so atomic on its own. Walks
-- operations_waiting_deadline.
UPDATE operations
SET status = ?2,
    terminal_reason = ?3,
    terminal_at = ?4,
    last_error = json_set(json_insert(coalesce(last_error, '{}'), '$.summary', ?5),
                          '$.decision', ?6, '$.next_action', ?7),
    updated_at = ?1
WHERE id IN (SELECT o.id FROM operations AS o INDEXED BY operations_waiting_deadline
             WHERE o.status IN ('pending', 'held') AND o.give_up_at < ?1
             ORDER BY o.give_up_at
             LIMIT ?8)
