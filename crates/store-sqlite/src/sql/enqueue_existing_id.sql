-- The stored operations that hold the idempotency keys an insert found taken: ?1 is a JSON array
-- of {kind, key}; each match comes back with its position in the array. Walks
-- operations_kind_idempotency_key once per key.
SELECT k.key AS position, o.id
FROM json_each(?1) AS k
JOIN operations AS o ON o.kind = k.value ->> 'kind' AND o.idempotency_key = k.value ->> 'key'
