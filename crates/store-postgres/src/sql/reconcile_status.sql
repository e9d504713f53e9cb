-- The status of operation $1 (no row: there is none), to say why a resolution wrote nothing.
-- Walks the primary key.
SELECT status FROM operations WHERE id = $1
