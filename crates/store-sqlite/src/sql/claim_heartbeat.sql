-- Extends a running claim's lease to ?1, fenced by the claim token; no row back means the token
-- is stale. Walks the primary key.
UPDATE operations SET lease_until = ?1
WHERE id = ?2 AND claim_token = ?3 AND status = 'running'
RETURNING lease_until
