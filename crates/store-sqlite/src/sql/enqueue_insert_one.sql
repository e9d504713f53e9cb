-- Enqueues one operation: a plain statement, prepared once per connection and then reused, for
-- the common single enqueue. A repeated idempotency key inserts nothing and returns no row (the
-- caller then reads the existing id). Checks the primary key and operations_kind_idempotency_key.
-- ?1 id, ?2 kind, ?3 idempotency key, ?4 payload (JSON text), ?5 payload mode, ?6 max attempts,
-- ?7 next eligible at, ?8 give up at, ?9 dependency, ?10 enqueue params (JSON text),
-- ?11 created at (also the first updated at), ?12 last woken at, ?13 traceparent,
-- ?14 priority.
INSERT INTO operations (id, kind, idempotency_key, payload, payload_mode, max_attempts,
                        next_eligible_at, give_up_at, dependency, enqueue_params, created_at,
                        updated_at, last_woken_at, traceparent, priority)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?11, ?12, ?13, ?14)
ON CONFLICT (kind, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
RETURNING id
