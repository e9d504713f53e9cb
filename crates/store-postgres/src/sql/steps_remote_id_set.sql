-- Records the effect's remote identity ($3) on operation $2 while it is running under claim token
-- $4; no row changed means the claim is stale. $1 is "now" (NULL: the database's clock). Walks
-- the primary key.
UPDATE operations SET remote_id = $3, updated_at = coalesce($1::timestamptz, now())
WHERE id = $2 AND claim_token = $4 AND status = 'running'
