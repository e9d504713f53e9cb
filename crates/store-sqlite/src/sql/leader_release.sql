-- Gives the leadership ?1 up when ?2 holds it. Walks the primary key.
DELETE FROM leaders WHERE name = ?1 AND holder = ?2
