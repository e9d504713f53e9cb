-- Takes the picked operations (?3, a JSON array of ids) for their reconcile hook: the next
-- reconcile time moves to ?2 (now + the hook's lease), so no other reconciler takes them
-- meanwhile, and one more reconcile try is counted. Walks the primary key once per id.
UPDATE operations
SET next_eligible_at = ?2,
    reconcile_attempts = reconcile_attempts + 1,
    updated_at = ?1
WHERE id IN (SELECT value FROM json_each(?3))
RETURNING id, kind, idempotency_key, payload, payload_mode, status, attempt, max_attempts,
          next_eligible_at, give_up_at, lease_until, claim_token, claimed_at, worker_id,
          last_failure_class, last_error, remote_id, dependency, terminal_reason, code_version,
          enqueue_params, redrive_of, redrive_root, redriven_as, traceparent, redrive_count, vanished_streak, suspect, isolated, snoozes, unknowns,
          last_woken_at, created_at,
          updated_at, terminal_at
