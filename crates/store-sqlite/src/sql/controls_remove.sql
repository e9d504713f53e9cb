-- Removes the control on (scope ?1, value ?2). Walks controls_scope_value.
DELETE FROM controls WHERE scope = ?1 AND value = ?2
