-- Inserts the attempt histories of restored operations, one array per column ($1 the operation),
-- each history oldest first, so that the new row ids keep its order. The per-minute counts
-- (attempt_minutes) counted these attempts when they first ended and kept them when the archive
-- removed them, so the restore takes back what the counting trigger adds for them. Each attempt
-- records its operation's dependency ('' for none), as a completion does (migration 0043): an
-- operation's dependency never changes after its enqueue, so it is the one the attempt ended with,
-- and the one the counts are taken back from.
WITH restored AS (
INSERT INTO operation_attempts (operation_id, attempt, claimed_at, ended_at, outcome, failure_class,
                                error, worker_id, code_version, isolated, stale_outcome,
                                stale_at, dependency)
SELECT a.operation_id, a.attempt, a.claimed_at, a.ended_at, a.outcome, a.failure_class, a.error,
       a.worker_id, a.code_version, a.isolated, a.stale_outcome, a.stale_at,
       coalesce(o.dependency, '')
FROM unnest($1::uuid[], $2::int4[], $3::timestamptz[], $4::timestamptz[], $5::text[], $6::text[],
            $7::jsonb[], $8::text[], $9::text[], $10::bool[], $11::text[], $12::timestamptz[])
     WITH ORDINALITY AS a(operation_id, attempt, claimed_at, ended_at, outcome, failure_class,
                          error, worker_id, code_version, isolated, stale_outcome, stale_at, n)
LEFT JOIN operations o ON o.id = a.operation_id
ORDER BY a.n
RETURNING ended_at, outcome, dependency
)
INSERT INTO attempt_minutes AS m (minute, dependency, shard, attempts, failed, snoozed)
SELECT date_trunc('minute', r.ended_at), r.dependency, pg_backend_pid() % 16,
       -count(*),
       -count(*) FILTER (WHERE r.outcome IN ('error', 'rejected', 'vanished', 'unknown')),
       -count(*) FILTER (WHERE r.outcome = 'snoozed')
FROM restored r
GROUP BY 1, 2
ORDER BY 1, 2
ON CONFLICT (minute, dependency, shard) DO UPDATE
SET attempts = m.attempts + excluded.attempts,
    failed = m.failed + excluded.failed,
    snoozed = m.snoozed + excluded.snoozed
