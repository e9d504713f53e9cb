-- Records the effect's remote identity ?1 during an attempt, fenced by the claim token; no row
-- changed means the token is stale. Walks the primary key.
UPDATE operations SET remote_id = ?1, updated_at = ?2
WHERE id = ?3 AND claim_token = ?4 AND status = 'running'
