-- Inserts one durable step of a restored operation (?1).
INSERT INTO operation_steps (operation_id, name, output, attempt, completed_at)
VALUES (?1, ?2, ?3, ?4, ?5)
