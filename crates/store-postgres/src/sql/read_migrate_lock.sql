-- Takes the migration lock of this database and schema if it is free (true) without waiting: a
-- session-level advisory lock. Migrations are run by whoever holds it; the others poll. Nobody waits
-- inside a statement for it, so a CREATE INDEX CONCURRENTLY run under the lock, which waits for
-- every statement older than itself in the database to end, never waits for a waiter of its own
-- lock (a deadlock with sqlx's own blocking lock, which is one per database, not per schema).
SELECT pg_try_advisory_lock(hashtextextended('oprec.migrate:' || current_database() || '.'
                                             || current_schema(), 0))
