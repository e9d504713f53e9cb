-- Enqueues a batch given as one JSON array of rows (?1), in array order; a row whose idempotency
-- key is taken inserts nothing and returns no row. JSON texts (payload, enqueue params) arrive as
-- JSON strings, so ->> hands back their text unchanged. `WHERE true` settles SQLite's parsing
-- ambiguity between a join's ON and the upsert's ON CONFLICT. Checks the primary key and
-- operations_kind_idempotency_key.
INSERT INTO operations (id, kind, idempotency_key, payload, payload_mode, max_attempts,
                        next_eligible_at, give_up_at, dependency, enqueue_params, created_at,
                        updated_at, last_woken_at, traceparent, priority)
SELECT value ->> 'id', value ->> 'kind', value ->> 'idempotency_key', value ->> 'payload',
       value ->> 'payload_mode', value ->> 'max_attempts', value ->> 'next_eligible_at',
       value ->> 'give_up_at', value ->> 'dependency', value ->> 'enqueue_params',
       value ->> 'created_at', value ->> 'created_at', value ->> 'last_woken_at',
       value ->> 'traceparent', value ->> 'priority'
FROM json_each(?1)
WHERE true
ON CONFLICT (kind, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
RETURNING id
