-- Inserts archived operations back, one array per column ($1 to $39), with every column as it was
-- archived; returns the ids inserted. A taken id or idempotency key inserts nothing for that row.
-- Checks the primary key and operations_kind_idempotency_key.
INSERT INTO operations (id, kind, idempotency_key, payload, payload_mode, status, attempt,
                        max_attempts, next_eligible_at, give_up_at, lease_until, claim_token,
                        claimed_at, worker_id, last_failure_class, last_error, remote_id,
                        dependency, terminal_reason, code_version, enqueue_params, redrive_of,
                        redrive_count, vanished_streak, last_woken_at, created_at, updated_at,
                        terminal_at, reconcile_attempts, alerted_at, alert_due_at, alert_failures,
                        redrive_root, suspect, isolated, snoozes, unknowns, redriven_as,
                        traceparent)
SELECT id, kind, idempotency_key, payload, payload_mode, status, attempt, max_attempts,
       next_eligible_at, give_up_at, lease_until, claim_token, claimed_at, worker_id,
       last_failure_class, last_error, remote_id, dependency, terminal_reason, code_version,
       enqueue_params, redrive_of, redrive_count, vanished_streak, last_woken_at, created_at,
       updated_at, terminal_at, reconcile_attempts, alerted_at, alert_due_at, alert_failures,
       redrive_root, suspect, isolated, snoozes, unknowns, redriven_as, traceparent
FROM unnest($1::uuid[], $2::text[], $3::text[], $4::jsonb[], $5::text[], $6::text[], $7::int4[],
            $8::int4[], $9::timestamptz[], $10::timestamptz[], $11::timestamptz[], $12::uuid[],
            $13::timestamptz[], $14::text[], $15::text[], $16::jsonb[], $17::text[], $18::text[],
            $19::text[], $20::text[], $21::jsonb[], $22::uuid[], $23::int4[], $24::int4[],
            $25::timestamptz[], $26::timestamptz[], $27::timestamptz[], $28::timestamptz[],
            $29::int4[], $30::timestamptz[], $31::timestamptz[], $32::int4[], $33::uuid[],
            $34::bool[], $35::bool[], $36::int4[], $37::int4[], $38::uuid[],
            $39::text[])
     WITH ORDINALITY AS t(id, kind, idempotency_key, payload, payload_mode, status, attempt,
                          max_attempts, next_eligible_at, give_up_at, lease_until, claim_token,
                          claimed_at, worker_id, last_failure_class, last_error, remote_id,
                          dependency, terminal_reason, code_version, enqueue_params, redrive_of,
                          redrive_count, vanished_streak, last_woken_at, created_at, updated_at,
                          terminal_at, reconcile_attempts, alerted_at, alert_due_at,
                          alert_failures, redrive_root, suspect, isolated, snoozes, unknowns,
                          redriven_as, traceparent, n)
ORDER BY n
ON CONFLICT DO NOTHING
RETURNING id
