-- Saves step $3 with output $4 for operation $2 if it is running under claim token $5 (a step
-- already saved keeps its first output); returns a row exactly when the claim is held, so a stale
-- claimant saves nothing. The claim check and the insert are one statement. $1 is "now" (NULL:
-- the database's clock). Walks the primary keys of operations and operation_steps.
WITH claim AS (
    SELECT id, attempt FROM operations
    WHERE id = $2 AND claim_token = $5 AND status = 'running'
), saved AS (
    INSERT INTO operation_steps (operation_id, name, output, attempt, completed_at)
    SELECT id, $3, $4, attempt, coalesce($1::timestamptz, now()) FROM claim
    ON CONFLICT (operation_id, name) DO NOTHING
)
SELECT true FROM claim
