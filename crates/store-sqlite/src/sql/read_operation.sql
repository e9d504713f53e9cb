-- One operation by id, every column the record type reads. Walks the primary key.
SELECT id, kind, idempotency_key, payload, payload_mode, status, attempt, max_attempts,
       next_eligible_at, give_up_at, lease_until, claim_token, claimed_at, worker_id,
       last_failure_class, last_error, remote_id, dependency, terminal_reason, code_version,
       enqueue_params, redrive_of, redrive_root, redriven_as, traceparent, redrive_count, vanished_streak, suspect, isolated, snoozes, unknowns,
          last_woken_at, created_at,
       updated_at, terminal_at
FROM operations
WHERE id = ?1
