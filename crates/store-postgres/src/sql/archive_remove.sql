-- Removes archived operations (their attempts and steps go with them: ON DELETE CASCADE), each only
-- while it is as it was read: terminal, same status, last change, attempt count, attempt rows and
-- announcement. The rows are locked first (FOR UPDATE re-checks the fence against a row changed
-- meanwhile), and one that an operation staying in the table names as redrive_of is kept, so the
-- lineage never points at nothing (operations_redrive_of makes that check and the foreign key's
-- an index probe). Looks each row up by primary key.
-- $1 ids, $2 statuses, $3 updated_at, $4 attempt, $5 attempt rows, $6 alerted_at.
WITH fence AS (
    SELECT *
    FROM unnest($1::uuid[], $2::text[], $3::timestamptz[], $4::int4[], $5::int8[],
                $6::timestamptz[]) AS f(id, status, updated_at, attempt, attempts, alerted_at)
), held AS (
    SELECT o.id
    FROM operations o
    JOIN fence f ON f.id = o.id
    WHERE o.status IN ('succeeded', 'dead', 'cancelled')
      AND o.status = f.status
      AND o.updated_at = f.updated_at
      AND o.attempt = f.attempt
      AND o.alerted_at IS NOT DISTINCT FROM f.alerted_at
      AND (SELECT count(*) FROM operation_attempts a WHERE a.operation_id = o.id) = f.attempts
    FOR UPDATE OF o
)
DELETE FROM operations d
USING held h
WHERE d.id = h.id
  AND NOT EXISTS (SELECT 1 FROM operations c WHERE c.redrive_of = d.id)
RETURNING d.id
