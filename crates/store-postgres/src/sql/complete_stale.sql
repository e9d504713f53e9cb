-- Writes completions the fence refused into the history of the attempts they belong to: for
-- each operation $2 and claim token $3 (arrays of the same length), the attempt row that claim
-- ended (the rescuer's vanished one, found by its token) records the outcome the late
-- completion brought ($4) and when it came ($1; NULL: the database's clock). The first late
-- outcome stays. Returns how many were written. Walks operation_attempts_operation (an
-- operation has a few attempts) and picks the one with the token.
UPDATE operation_attempts a
SET stale_outcome = s.outcome, stale_at = coalesce($1::timestamptz, now())
FROM UNNEST($2::uuid[], $3::uuid[], $4::text[]) AS s(id, token, outcome)
WHERE a.claim_token = s.token AND a.operation_id = s.id AND a.stale_outcome IS NULL
