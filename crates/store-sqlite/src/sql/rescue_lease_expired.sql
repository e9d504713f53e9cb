-- Running operations whose lease ended before ?1, longest expired first, at most ?2, with their
-- claim tokens, for the rescuer to decide on. INDEXED BY the partial index of running rows,
-- operations_running_lease, for the reason given in claim_eligible.sql.
SELECT id, kind, idempotency_key, payload, payload_mode, status, attempt, max_attempts,
       next_eligible_at, give_up_at, lease_until, claim_token, claimed_at, worker_id,
       last_failure_class, last_error, remote_id, dependency, terminal_reason, code_version,
       enqueue_params, redrive_of, redrive_root, redriven_as, traceparent, redrive_count, vanished_streak, suspect, isolated, snoozes, unknowns,
          last_woken_at, created_at,
       updated_at, terminal_at
FROM operations INDEXED BY operations_running_lease
WHERE status = 'running' AND lease_until < ?1
ORDER BY lease_until
LIMIT ?2
