-- Inserts the durable steps of restored operations, one array per column ($1 the operation).
INSERT INTO operation_steps (operation_id, name, output, attempt, completed_at)
SELECT s.operation_id, s.name, s.output, s.attempt, s.completed_at
FROM unnest($1::uuid[], $2::text[], $3::jsonb[], $4::int4[], $5::timestamptz[])
     AS s(operation_id, name, output, attempt, completed_at)
