-- Rolling deploy: safe while workers run; SQLite builds it under the write lock (writers wait
-- within their busy timeout, about a second per million operations).
-- Removing an operation makes SQLite check that no re-drive names it (the redrive_of foreign
-- key): without an index that check reads the whole table once per removed row.
CREATE INDEX operations_redrive_of
    ON operations (redrive_of) WHERE redrive_of IS NOT NULL;
