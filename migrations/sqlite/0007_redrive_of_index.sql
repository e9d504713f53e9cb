-- Rolling deploy: safe while workers of the previous release run. It only adds an index; SQLite
-- builds it under the database's write lock, so writers wait (within their busy timeout) for as
-- long as the build takes: about a second per million operations. No code of the previous release
-- reads or needs it.
--
-- Operations by the operation they re-drive. Removing an operation (archive) checks that none
-- names it as redrive_of, and so does the foreign key: an index probe each, instead of a scan of
-- the whole table for every row removed.
CREATE INDEX operations_redrive_of ON operations (redrive_of) WHERE redrive_of IS NOT NULL;
