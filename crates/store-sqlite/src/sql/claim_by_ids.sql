-- Claims the operations of ?5 (a JSON array of {id, token}, ids distinct) that are still
-- pending, eligible at ?1, within their deadline, of the kinds in ?6 (a JSON array; empty means
-- any) and held back by no control: running, attempt + 1, the given token, lease until ?2.
-- ?7 says which claim this is: 0 claims only operations that are not suspects (wake-ups, the
-- eligible pick), 1 only suspects, marked isolated (claim_suspect.sql's pick, run alone).
-- MATERIALIZED: the input is read once and each row looked up by primary key; otherwise SQLite
-- walks every pending row and scans the input for each. The unary + keeps SQLite from reading
-- the status or suspect conditions as a reason to walk operations_status_kind instead.
-- ?3 worker id, ?4 code version.
WITH input AS MATERIALIZED (
    SELECT value ->> 'id' AS op_id, value ->> 'token' AS token FROM json_each(?5)
)
UPDATE operations
SET status = 'running',
    attempt = operations.attempt + 1,
    claim_token = input.token,
    lease_until = ?2,
    claimed_at = ?1,
    worker_id = ?3,
    code_version = ?4,
    isolated = ?7,
    updated_at = ?1
FROM input
WHERE operations.id = input.op_id
  AND +operations.status = 'pending'
  AND +operations.suspect = ?7
  AND operations.next_eligible_at <= ?1
  AND (operations.give_up_at IS NULL OR operations.give_up_at >= ?1)
  AND (json_array_length(?6) = 0 OR operations.kind IN (SELECT value FROM json_each(?6)))
  AND /*not_held_back*/
RETURNING id, kind, idempotency_key, payload, payload_mode, status, attempt, max_attempts,
          next_eligible_at, give_up_at, lease_until, claim_token, claimed_at, worker_id,
          last_failure_class, last_error, remote_id, dependency, terminal_reason, code_version,
          enqueue_params, redrive_of, redrive_root, redriven_as, traceparent, redrive_count, vanished_streak, suspect, isolated, snoozes, unknowns,
          last_woken_at, created_at,
          updated_at, terminal_at
