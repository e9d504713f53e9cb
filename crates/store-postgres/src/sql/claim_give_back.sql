-- Gives back unstarted claims: the operations $2 with their claim tokens $3 (arrays of the same
-- length), each still running under its token, go back to pending with the attempt the claim
-- counted refunded, the claim cleared and marked never woken (the scheduler wakes them on its
-- next pass); next_eligible_at stays, so they are claimable at once. No attempt row: no attempt
-- was made. $1 is "now" (NULL: the database's clock). Returns the ids given back. Walks the
-- primary key.
UPDATE operations o
SET status = 'pending', attempt = o.attempt - 1, claim_token = NULL, lease_until = NULL,
    last_woken_at = NULL, updated_at = coalesce($1::timestamptz, now())
FROM UNNEST($2::uuid[], $3::uuid[]) AS g(id, token)
WHERE o.id = g.id AND o.claim_token = g.token AND o.status = 'running'
RETURNING o.id
