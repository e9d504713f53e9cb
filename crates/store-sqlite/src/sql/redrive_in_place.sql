-- Re-drives picked terminal operations in place: ?2 is a JSON array of {from, at, deadline}. Each
-- becomes pending with attempt 0, eligible at its `at`, its terminal fields, claim, crash-loop,
-- suspect and snooze counters, reconcile tries, alert and last wake-up cleared, and one more re-drive counted. With a deadline given
-- it replaces give_up_at; otherwise a give_up_at before `at` is cleared and a later one kept.
-- MATERIALIZED: the input is read once and each row looked up by primary key.
WITH input AS MATERIALIZED (
    SELECT value ->> 'from' AS op_id, value ->> 'at' AS at, value ->> 'deadline' AS deadline
    FROM json_each(?2)
)
UPDATE operations
SET status = 'pending',
    attempt = 0,
    next_eligible_at = input.at,
    give_up_at = CASE WHEN input.deadline IS NOT NULL THEN input.deadline
                      WHEN operations.give_up_at < input.at THEN NULL
                      ELSE operations.give_up_at END,
    terminal_reason = NULL,
    terminal_at = NULL,
    vanished_streak = 0,
    suspect = 0,
    isolated = 0,
    snoozes = 0,
    unknowns = 0,
    reconcile_attempts = 0,
    alerted_at = NULL,
    last_woken_at = NULL,
    claim_token = NULL,
    lease_until = NULL,
    redrive_count = operations.redrive_count + 1,
    updated_at = ?1
FROM input
WHERE operations.id = input.op_id
RETURNING id
