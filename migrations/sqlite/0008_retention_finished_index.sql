-- Rolling deploy: safe while workers run; SQLite builds it under the write lock (writers wait
-- within their busy timeout, about a second per million operations).
-- Finished operations that retention may remove, by the time they finished: the retention pass
-- walks it oldest first and stops at its cutoff. Dead operations are left out (retention never
-- removes them). Same number as PostgreSQL's concurrent build of the same index.
CREATE INDEX operations_finished_at
    ON operations (terminal_at) WHERE status IN ('succeeded', 'cancelled');
