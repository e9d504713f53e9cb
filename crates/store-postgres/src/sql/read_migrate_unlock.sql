-- Gives the migration lock of this database and schema back (see read_migrate_lock.sql).
SELECT pg_advisory_unlock(hashtextextended('oprec.migrate:' || current_database() || '.'
                                           || current_schema(), 0))
