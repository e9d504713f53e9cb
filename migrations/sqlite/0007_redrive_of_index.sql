-- Removing an operation makes SQLite check that no re-drive names it (the redrive_of foreign
-- key): without an index that check reads the whole table once per removed row.
CREATE INDEX operations_redrive_of
    ON operations (redrive_of) WHERE redrive_of IS NOT NULL;
