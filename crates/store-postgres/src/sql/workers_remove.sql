-- Removes worker $1's row (its clean shutdown). Walks the primary key of workers.
DELETE FROM workers WHERE id = $1
