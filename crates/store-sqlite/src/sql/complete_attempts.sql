-- Appends the attempt rows of the claims complete_apply.sql ended: ?1 is a JSON array of rows.
-- `WHERE true` keeps the statement's shape the same as the other JSON-fed inserts.
INSERT INTO operation_attempts (operation_id, attempt, claimed_at, ended_at, outcome,
                                failure_class, error, worker_id, code_version, isolated,
                                claim_token)
SELECT value ->> 'operation_id', value ->> 'attempt', value ->> 'claimed_at',
       value ->> 'ended_at', value ->> 'outcome', value ->> 'failure_class', value ->> 'error',
       value ->> 'worker_id', value ->> 'code_version', value ->> 'isolated',
       value ->> 'claim_token'
FROM json_each(?1)
WHERE true
