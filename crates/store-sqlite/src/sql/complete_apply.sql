-- Ends claims with the transitions core decided, for completions and rescues alike: ?2 is a JSON
-- array of rows (distinct operations), each fenced by its claim token and status 'running', and
-- a vanished attempt (expired_fence = 1) also by its lease having expired by ?1, so a heartbeat
-- since the rescuer looked wins. Absent values keep the stored ones (a vanished attempt keeps the
-- last failure class); a vanished isolated attempt (crash_counted) adds one to vanished_streak,
-- a release (suspect null) keeps it, any other end resets it; suspect is set as core says (null
-- keeps it); a snooze spends one of the snooze budget, an automatic retry of an unknown outcome
-- one of the unknown budget. Returns the claim as it was, for the
-- attempt rows (complete_attempts.sql), with whether it ran isolated.
-- MATERIALIZED: the input is read once and each row looked up by primary key.
WITH input AS MATERIALIZED (
    SELECT value ->> 'id' AS op_id,
           value ->> 'token' AS token,
           value ->> 'status' AS status,
           value ->> 'next_eligible_at' AS next_eligible_at,
           value ->> 'failure_class' AS failure_class,
           value ->> 'error' AS error,
           value ->> 'terminal_reason' AS terminal_reason,
           value ->> 'terminal_at' AS terminal_at,
           value ->> 'remote_id' AS remote_id,
           value ->> 'refund' AS refund,
           value ->> 'crash_counted' AS crash_counted,
           value ->> 'expired_fence' AS expired_fence,
           value ->> 'suspect' AS suspect,
           value ->> 'snoozed' AS snoozed
    FROM json_each(?2)
)
UPDATE operations
SET status = input.status,
    attempt = operations.attempt - input.refund,
    next_eligible_at = coalesce(input.next_eligible_at, operations.next_eligible_at),
    last_failure_class = coalesce(input.failure_class, operations.last_failure_class),
    last_error = coalesce(input.error, operations.last_error),
    terminal_reason = input.terminal_reason,
    terminal_at = input.terminal_at,
    remote_id = coalesce(input.remote_id, operations.remote_id),
    vanished_streak = CASE WHEN input.crash_counted THEN operations.vanished_streak + 1
                           WHEN input.suspect IS NULL THEN operations.vanished_streak
                           ELSE 0 END,
    suspect = coalesce(input.suspect, operations.suspect),
    snoozes = operations.snoozes + input.snoozed,
    unknowns = operations.unknowns
               + (input.status = 'pending' AND input.failure_class IS 'unknown'),
    claim_token = NULL,
    lease_until = NULL,
    updated_at = ?1
FROM input
WHERE operations.id = input.op_id
  AND operations.claim_token = input.token
  AND operations.status = 'running'
  AND (NOT input.expired_fence OR operations.lease_until < ?1)
RETURNING id, attempt, claimed_at, worker_id, code_version, isolated
