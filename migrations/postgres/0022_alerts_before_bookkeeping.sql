-- Rolling deploy: safe while workers run: one UPDATE of the dead operations that died before
-- 0002 added the alert bookkeeping and were never announced since (found through the partial
-- index operations_dead_unalerted, no scan of the table); the previous release's alerter skips
-- what this marks, as it skips every announced row.
--
-- 0002 added alerted_at NULL to every row, so the first alerter after an upgrade from 0001 took
-- each dead operation of the table's whole history for a new death and posted them all to the
-- webhook at once. Deaths from before the bookkeeping existed are marked as announced when it
-- began (0002's installation time); an alert that failed or is being sent (alert_due_at,
-- alert_failures) is left to the alerter. On a database that was made at 0002 or later, or whose
-- alerter has run since, nothing matches.
UPDATE operations o
SET alerted_at = m.installed_on
FROM _sqlx_migrations m
WHERE m.version = 2
  AND o.status = 'dead' AND o.alerted_at IS NULL
  AND o.alert_due_at IS NULL AND o.alert_failures = 0
  AND coalesce(o.terminal_at, o.updated_at) < m.installed_on;
