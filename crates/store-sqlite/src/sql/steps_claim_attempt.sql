-- The attempt of the running claim that holds token ?2 on operation ?1; no row means the token
-- is stale. Walks the primary key.
SELECT attempt FROM operations WHERE id = ?1 AND claim_token = ?2 AND status = 'running'
