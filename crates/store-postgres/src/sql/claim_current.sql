-- Whether operation $2 is still running under claim token $3 with its lease not expired by "now"
-- ($1; NULL: the database's clock): the claim is current, and nobody may take it over yet.
-- Changes nothing. Walks the primary key.
SELECT EXISTS (
    SELECT 1 FROM operations
    WHERE id = $2 AND claim_token = $3 AND status = 'running'
      AND lease_until > coalesce($1::timestamptz, now())
)
