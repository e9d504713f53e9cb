-- Writes completions the fence refused into the history of the attempts they belong to: ?2 is
-- a JSON array of {id, token, outcome}; the attempt row each claim ended (the rescuer's vanished
-- one, found by its token) records the outcome the late completion brought and when it came
-- (?1). The first late outcome stays. Walks operation_attempts_operation (an operation has a
-- few attempts) and picks the one with the token.
WITH input AS MATERIALIZED (
    SELECT value ->> 'id' AS op_id, value ->> 'token' AS token, value ->> 'outcome' AS outcome
    FROM json_each(?2)
)
UPDATE operation_attempts
SET stale_outcome = input.outcome, stale_at = ?1
FROM input
WHERE operation_attempts.claim_token = input.token
  AND operation_attempts.operation_id = input.op_id
  AND operation_attempts.stale_outcome IS NULL
