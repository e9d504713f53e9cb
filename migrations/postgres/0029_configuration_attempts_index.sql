-- no-transaction
-- Rolling deploy: safe while workers run: builds the index CONCURRENTLY, so writers are not
-- blocked while it is built. The previous release does not use it.
--
-- The attempts that failed for configuration (rejected credentials: the operation is held for
-- its owner), by the time they ended: the maintenance leader reads the ones newer than the last
-- it alerted (alerts_holds), so each pass reads only new holds, never the attempt history.
-- A partial index: attempts of every other class add no entry.
CREATE INDEX CONCURRENTLY IF NOT EXISTS operation_attempts_configuration
    ON operation_attempts (ended_at) WHERE failure_class = 'configuration';
