-- The limits a claim of the kinds ?1 (a JSON array; empty means any) may reach: every dependency
-- limit (any operation may call a dependency) and the kind limits on those kinds. Read under the
-- claim's write lock, which is what makes limited claims take turns on SQLite (PostgreSQL locks
-- these rows instead). No row (the usual case): the claim goes on unlimited.
SELECT scope, value, max_running, per_second, recent_starts, reason, actor, set_at
FROM operation_limits
WHERE scope = 'dependency'
   OR json_array_length(?1) = 0
   OR value IN (SELECT value FROM json_each(?1))
ORDER BY scope, value
