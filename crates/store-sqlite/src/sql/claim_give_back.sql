-- Gives back unstarted claims: ?2 is a JSON array of {id, token}; each operation still running
-- under its token goes back to pending with the attempt the claim counted refunded, the claim
-- cleared and marked never woken (the scheduler wakes it on its next pass); next_eligible_at
-- stays, so it is claimable at once. No attempt row: no attempt was made. ?1 is "now". Returns
-- the ids given back.
-- MATERIALIZED: the input is read once and each row looked up by primary key.
WITH input AS MATERIALIZED (
    SELECT value ->> 'id' AS op_id, value ->> 'token' AS token FROM json_each(?2)
)
UPDATE operations
SET status = 'pending',
    attempt = operations.attempt - 1,
    claim_token = NULL,
    lease_until = NULL,
    last_woken_at = NULL,
    updated_at = ?1
FROM input
WHERE operations.id = input.op_id
  AND operations.claim_token = input.token
  AND operations.status = 'running'
RETURNING id
