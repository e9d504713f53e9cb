-- Attempts recorded for succeeded operations (snoozes left out), and how many succeeded.
SELECT (SELECT count(*) FROM operation_attempts AS a
        JOIN operations AS o ON o.id = a.operation_id
        WHERE o.status = 'succeeded' AND a.outcome <> 'snoozed') AS attempts,
       (SELECT count(*) FROM operations WHERE status = 'succeeded') AS successes
