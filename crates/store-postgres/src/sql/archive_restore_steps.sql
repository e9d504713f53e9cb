-- Inserts a restored operation's ($1) durable steps. $2.. one array per column.
INSERT INTO operation_steps (operation_id, name, output, attempt, completed_at)
SELECT $1, s.name, s.output, s.attempt, s.completed_at
FROM unnest($2::text[], $3::jsonb[], $4::int4[], $5::timestamptz[])
     AS s(name, output, attempt, completed_at)
