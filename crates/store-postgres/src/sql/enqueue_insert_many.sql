-- Enqueues a batch (one array per column, $1 to $14) in one statement; returns, for each input
-- row by its position (ord, 1-based), the id it resolves to and whether it was created: the new
-- row, or the stored operation whose idempotency key it repeats. An id is NULL when another
-- transaction committed the same key after this statement's snapshot (enqueue_existing_id.sql
-- then finds it). The batch holds no key twice (core's IdempotentBatch removed repeats). Checks
-- operations_kind_idempotency_key.
WITH input AS (
    SELECT * FROM UNNEST($1::uuid[], $2::text[], $3::text[], $4::jsonb[], $5::text[],
                         $6::int4[], $7::timestamptz[], $8::timestamptz[], $9::text[],
                         $10::jsonb[], $11::timestamptz[], $12::timestamptz[],
                         $13::text[], $14::int2[])
        WITH ORDINALITY AS t(id, kind, idempotency_key, payload, payload_mode, max_attempts,
                             next_eligible_at, give_up_at, dependency, enqueue_params,
                             created_at, last_woken_at, traceparent, priority, ord)
), ins AS (
    INSERT INTO operations (id, kind, idempotency_key, payload, payload_mode, max_attempts,
                            next_eligible_at, give_up_at, dependency, enqueue_params,
                            created_at, updated_at, last_woken_at, traceparent, priority)
    SELECT id, kind, idempotency_key, payload, payload_mode, max_attempts, next_eligible_at,
           give_up_at, dependency, enqueue_params, created_at, created_at, last_woken_at,
           traceparent, priority
    FROM input ORDER BY ord
    ON CONFLICT (kind, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
    RETURNING id
)
SELECT input.ord, coalesce(ins.id, existing.id) AS id, ins.id IS NOT NULL AS created
FROM input
LEFT JOIN ins ON ins.id = input.id
LEFT JOIN operations existing
       ON ins.id IS NULL AND existing.kind = input.kind
      AND existing.idempotency_key = input.idempotency_key
ORDER BY input.ord
