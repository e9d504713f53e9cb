-- no-transaction
-- Rolling deploy: safe while workers of the previous release run. It only adds an index, built
-- with CREATE INDEX CONCURRENTLY outside a transaction (the first line above tells sqlx so), so
-- enqueues, claims and completions go on while it is built; a plain CREATE INDEX would block every
-- write to operations until it finished. No code of the previous release reads or needs it.
-- If the build is interrupted it leaves an INVALID index and the migration unrecorded, and the
-- next `oprec migrate` then fails on the name (no IF NOT EXISTS, on purpose: an invalid index must
-- not pass for a built one): DROP INDEX CONCURRENTLY operations_redrive_of; then migrate again.
--
-- Operations by the operation they re-drive. Removing an operation (archive) checks that none
-- names it as redrive_of, and so does the foreign key: an index probe each, instead of a scan of
-- the whole table for every row removed. A plain column, no predicate: PostgreSQL (14 and later)
-- then lets other concurrent index builds in the database go on without waiting for this one.
CREATE INDEX CONCURRENTLY operations_redrive_of
    ON operations (redrive_of);
