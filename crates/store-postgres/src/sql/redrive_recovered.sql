-- When an operation of kind $1 first succeeded after $2: a re-drive's dry run asks whether the
-- cause of a group's deaths is gone. One probe into operations_finished_kind (status, kind,
-- terminal_at), walked from $3 to its first row (the caller's transaction prices sorts out, so
-- the planner keeps that walk whatever the statistics say). A group with a dependency asks about
-- the dependency instead, across kinds (redrive.rs, `recovered_dependency`).
SELECT o.terminal_at FROM operations o
WHERE o.status IN ('succeeded', 'cancelled') AND o.status = 'succeeded' AND o.kind = $1
  AND o.terminal_at > $2
ORDER BY o.status, o.kind, o.terminal_at
LIMIT 1
