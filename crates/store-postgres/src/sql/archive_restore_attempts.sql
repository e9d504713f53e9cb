-- Inserts a restored operation's ($1) attempt history, oldest first, so that the new row ids keep
-- its order. $2.. one array per column.
INSERT INTO operation_attempts (operation_id, attempt, claimed_at, ended_at, outcome, failure_class,
                                error, worker_id, code_version)
SELECT $1, a.attempt, a.claimed_at, a.ended_at, a.outcome, a.failure_class, a.error, a.worker_id,
       a.code_version
FROM unnest($2::int4[], $3::timestamptz[], $4::timestamptz[], $5::text[], $6::text[], $7::jsonb[],
            $8::text[], $9::text[])
     WITH ORDINALITY AS a(attempt, claimed_at, ended_at, outcome, failure_class, error, worker_id,
                          code_version, n)
ORDER BY a.n
