-- The attempts recorded for succeeded operations (snoozes left out), and how many operations
-- succeeded: their ratio is the attempts per completed effect. Reads operations_status_kind
-- (status, kind, id), then operation_attempts_operation (operation_id, id).
SELECT (SELECT count(*)
        FROM operation_attempts a
        JOIN operations o ON o.id = a.operation_id
        WHERE o.status = 'succeeded' AND a.outcome <> 'snoozed') AS attempts,
       (SELECT count(*) FROM operations WHERE status = 'succeeded') AS successes
