-- Ends claims with the transitions core decided, one array per field ($2 to $16), and records each
-- ended claim in operation_attempts; returns the (id, token) of every claim it ended, so that the
-- others are stale. $1 is "now" (NULL: the database's clock). Each row is fenced by its transition:
-- still running under its claim token, and, for a vanished attempt (expired_only), with its lease
-- expired by "now", so that a heartbeat since the rescuer looked wins. The crash-loop counter goes
-- up by one for a vanished isolated attempt (crash_counted), stays for a release (suspect NULL) and
-- goes back to zero for every other end; suspect is set as core says (NULL keeps it); a snooze
-- spends one of the snooze budget, an automatic retry of an unknown outcome one of the unknown
-- budget. A NULL class, error, next time or remote id keeps the stored one. The attempt row keeps
-- whether the claim ran isolated, its token (a stale completion finds it by the token) and the
-- operation's dependency ('' for none: the per-minute counting trigger reads it there instead of
-- looking the operation up, migration 0043). Walks the primary key, whatever the statistics say:
-- the rows are found by `id = ANY($2)`, and "still running" is written as a lease being held (the
-- table's CHECK makes a claim token and a lease held together the same as status running), so that
-- no index on status can tempt a planner whose statistics predate the claims into walking every
-- running row (or, custom-planned for a large batch, every row of the table) on each completion.
-- The ids come as an array the planner does not see into (`ARRAY(SELECT unnest($2))`, which it
-- takes for a few ids): seeing 800 ids in a table of 30,000 it read the whole table instead
-- (claim_by_ids.sql).
WITH now AS (SELECT coalesce($1::timestamptz, now()) AS t),
input AS (
    SELECT * FROM UNNEST($2::uuid[], $3::uuid[], $4::text[], $5::bool[], $6::timestamptz[],
                         $7::text[], $8::jsonb[], $9::text[], $10::bool[], $11::text[],
                         $12::text[], $13::bool[], $14::bool[], $15::bool[], $16::bool[])
        AS t(id, token, status, terminal, next_eligible_at, failure_class, error,
             terminal_reason, refund, remote_id, outcome, crash_counted, expired_only,
             suspect, snoozed)
), done AS (
    UPDATE operations o
    SET status = i.status,
        attempt = o.attempt - CASE WHEN i.refund THEN 1 ELSE 0 END,
        next_eligible_at = coalesce(i.next_eligible_at, o.next_eligible_at),
        last_failure_class = coalesce(i.failure_class, o.last_failure_class),
        last_error = coalesce(i.error, o.last_error),
        terminal_reason = i.terminal_reason,
        remote_id = coalesce(i.remote_id, o.remote_id),
        terminal_at = CASE WHEN i.terminal THEN now.t END,
        vanished_streak = CASE WHEN i.crash_counted THEN o.vanished_streak + 1
                               WHEN i.suspect IS NULL THEN o.vanished_streak ELSE 0 END,
        suspect = coalesce(i.suspect, o.suspect),
        snoozes = o.snoozes + CASE WHEN i.snoozed THEN 1 ELSE 0 END,
        unknowns = o.unknowns
                   + CASE WHEN i.status = 'pending' AND i.failure_class = 'unknown' THEN 1 ELSE 0 END,
        claim_token = NULL, lease_until = NULL, updated_at = now.t
    FROM input i, now
    WHERE o.id = ANY (ARRAY(SELECT unnest($2::uuid[]))) AND o.id = i.id AND o.claim_token = i.token
      AND o.lease_until IS NOT NULL
      AND (NOT i.expired_only OR o.lease_until < now.t)
    RETURNING o.id, i.token, o.attempt + CASE WHEN i.refund THEN 1 ELSE 0 END AS attempt,
              o.claimed_at, o.worker_id, o.code_version, o.isolated, i.outcome, i.failure_class,
              i.error, o.dependency
), history AS (
    INSERT INTO operation_attempts (operation_id, attempt, claimed_at, ended_at, outcome,
                                    failure_class, error, worker_id, code_version, isolated,
                                    claim_token, dependency)
    SELECT done.id, done.attempt, done.claimed_at, now.t, done.outcome, done.failure_class,
           done.error, done.worker_id, done.code_version, done.isolated, done.token,
           coalesce(done.dependency, '')
    FROM done, now
)
SELECT id, token FROM done
