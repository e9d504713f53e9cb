-- Saves a completed step; a step already saved keeps its first output. Walks the primary key of
-- operation_steps.
INSERT INTO operation_steps (operation_id, name, output, attempt, completed_at)
VALUES (?1, ?2, ?3, ?4, ?5)
ON CONFLICT (operation_id, name) DO NOTHING
