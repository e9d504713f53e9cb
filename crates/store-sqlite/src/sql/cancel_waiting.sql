-- Cancels (by an operator) the operations of ?2 (a JSON array of ids) that are pending, held or
-- reconciling, at ?1; running and terminal ones are left alone. Returns the ids cancelled.
-- MATERIALIZED: the input is read once and each row looked up by primary key; otherwise SQLite
-- walks every waiting row and looks each one up in the input.
WITH input AS MATERIALIZED (SELECT value AS op_id FROM json_each(?2))
UPDATE operations
SET status = 'cancelled', terminal_reason = 'operator', terminal_at = ?1, updated_at = ?1
FROM input
WHERE operations.id = input.op_id
  AND operations.status IN ('pending', 'held', 'reconciling')
RETURNING id
