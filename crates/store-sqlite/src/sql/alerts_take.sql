-- Takes the picked announcements (?2, a JSON array of ids) until ?1 (now + the announcer's
-- lease), so no other announcer takes them meanwhile. Walks the primary key once per id.
UPDATE operations
SET alert_due_at = ?1
WHERE id IN (SELECT value FROM json_each(?2))
RETURNING id, kind, idempotency_key, payload, payload_mode, status, attempt, max_attempts,
          next_eligible_at, give_up_at, lease_until, claim_token, claimed_at, worker_id,
          last_failure_class, last_error, remote_id, dependency, terminal_reason, code_version,
          enqueue_params, redrive_of, redrive_root, redriven_as, traceparent, redrive_count, vanished_streak, suspect, isolated, snoozes, unknowns,
          last_woken_at, created_at,
          updated_at, terminal_at, alert_failures
