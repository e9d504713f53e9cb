-- Rolling deploy: safe while workers run: a moment's write lock. Neither this release nor the
-- previous one reads it.
--
-- operation_attempts_ended (ended_at, 0002) served `oprec stats`' attempts of the last hour, which
-- have been read from attempt_minutes since 0013; the configuration holds walk their own partial
-- index (0024). Nothing has read it since, and every attempt recorded still wrote an entry in it.
-- An operation's attempts are found by operation_attempts_operation (operation_id, id).
DROP INDEX IF EXISTS operation_attempts_ended;
