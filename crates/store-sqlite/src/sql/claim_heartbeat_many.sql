-- Extends, in one statement, the leases of every claim a worker holds to ?1: ?2 is a JSON array
-- of {id, token}, each fenced by its claim token and status 'running'. Returns the ids extended;
-- a claim left out is stale.
-- MATERIALIZED: the input is read once and each row looked up by primary key.
WITH input AS MATERIALIZED (
    SELECT value ->> 'id' AS op_id, value ->> 'token' AS token FROM json_each(?2)
)
UPDATE operations SET lease_until = ?1
FROM input
WHERE operations.id = input.op_id
  AND operations.claim_token = input.token
  AND operations.status = 'running'
RETURNING id
