-- Writes back the window of recent starts ?3 (core's RateWindow JSON) of the limit ?1 (scope) /
-- ?2 (value), after the claim that used it, under the same write lock.
UPDATE operation_limits SET recent_starts = ?3 WHERE scope = ?1 AND value = ?2
