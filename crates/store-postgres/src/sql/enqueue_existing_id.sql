-- The operation that holds idempotency key $2 for kind $1. Walks
-- operations_kind_idempotency_key.
SELECT id FROM operations WHERE kind = $1 AND idempotency_key = $2
