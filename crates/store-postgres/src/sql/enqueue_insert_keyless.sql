-- Enqueues a batch in which no operation has an idempotency key (one array per column, $1 to
-- $14 as in enqueue_insert_many.sql, $3 all NULL; the wake-up mark last_woken_at in the same
-- statement): nothing can conflict, so a plain INSERT ... SELECT FROM UNNEST, with no conflict
-- clause and no look-up of existing operations.
INSERT INTO operations (id, kind, idempotency_key, payload, payload_mode, max_attempts,
                        next_eligible_at, give_up_at, dependency, enqueue_params,
                        created_at, updated_at, last_woken_at, traceparent, priority)
SELECT id, kind, idempotency_key, payload, payload_mode, max_attempts, next_eligible_at,
       give_up_at, dependency, enqueue_params, created_at, created_at, last_woken_at, traceparent,
       priority
FROM UNNEST($1::uuid[], $2::text[], $3::text[], $4::jsonb[], $5::text[], $6::int4[],
            $7::timestamptz[], $8::timestamptz[], $9::text[], $10::jsonb[], $11::timestamptz[],
            $12::timestamptz[], $13::text[], $14::int2[])
    AS t(id, kind, idempotency_key, payload, payload_mode, max_attempts, next_eligible_at,
         give_up_at, dependency, enqueue_params, created_at, last_woken_at, traceparent, priority)
