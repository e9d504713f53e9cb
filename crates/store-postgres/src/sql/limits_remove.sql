-- Removes the limit on $1 (scope) / $2 (value); returns it if there was one.
DELETE FROM operation_limits WHERE scope = $1 AND value = $2 RETURNING value
