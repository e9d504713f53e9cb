-- Inserts the attempt histories of restored operations, one array per column ($1 the operation),
-- each history oldest first, so that the new row ids keep its order.
INSERT INTO operation_attempts (operation_id, attempt, claimed_at, ended_at, outcome, failure_class,
                                error, worker_id, code_version, isolated, stale_outcome,
                                stale_at)
SELECT a.operation_id, a.attempt, a.claimed_at, a.ended_at, a.outcome, a.failure_class, a.error,
       a.worker_id, a.code_version, a.isolated, a.stale_outcome, a.stale_at
FROM unnest($1::uuid[], $2::int4[], $3::timestamptz[], $4::timestamptz[], $5::text[], $6::text[],
            $7::jsonb[], $8::text[], $9::text[], $10::bool[], $11::text[], $12::timestamptz[])
     WITH ORDINALITY AS a(operation_id, attempt, claimed_at, ended_at, outcome, failure_class,
                          error, worker_id, code_version, isolated, stale_outcome, stale_at, n)
ORDER BY a.n
