-- Inserts an archived operation back with every column as it was archived. A taken id or
-- idempotency key inserts nothing and returns no row. Checks the primary key and
-- operations_kind_idempotency_key.
INSERT INTO operations (id, kind, idempotency_key, payload, payload_mode, status, attempt,
                        max_attempts, next_eligible_at, give_up_at, lease_until, claim_token,
                        claimed_at, worker_id, last_failure_class, last_error, remote_id,
                        dependency, terminal_reason, code_version, enqueue_params, redrive_of,
                        redrive_count, vanished_streak, last_woken_at, created_at, updated_at,
                        terminal_at, reconcile_attempts, alerted_at, alert_due_at, alert_failures,
                        redrive_root, suspect, isolated, snoozes, unknowns, redriven_as,
                        traceparent)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20,
        ?21, ?22, ?23, ?24, ?25, ?26, ?27, ?28, ?29, ?30, ?31, ?32, ?33, ?34, ?35, ?36, ?37, ?38,
        ?39)
ON CONFLICT DO NOTHING
RETURNING id
