-- Removes a worker's row (its clean shutdown). Walks the primary key.
DELETE FROM workers WHERE id = ?1
