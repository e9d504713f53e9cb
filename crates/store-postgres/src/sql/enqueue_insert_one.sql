-- Enqueues one operation; returns its id, or no row when its idempotency key is already taken
-- for its kind (enqueue_existing_id.sql then finds the operation that holds it). A plain
-- INSERT ... VALUES, whose plan PostgreSQL caches: the batch statement's arrays would be planned
-- anew on every call. Checks operations_kind_idempotency_key.
INSERT INTO operations (id, kind, idempotency_key, payload, payload_mode, max_attempts,
                        next_eligible_at, give_up_at, dependency, enqueue_params,
                        created_at, updated_at, last_woken_at, traceparent, priority)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $11, $12, $13, $14)
ON CONFLICT (kind, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
RETURNING id
