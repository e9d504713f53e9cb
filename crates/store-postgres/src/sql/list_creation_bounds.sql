-- The smallest and the largest id of the operations created from $1 (or ever) until before $2
-- (or now): those of the five-minute creation slots the range touches (migration 0033). NULLs
-- when no operation was created in them. (uuid has no min() before PostgreSQL 16; its text in
-- the C collation orders as it does.)
SELECT min(first_id::text COLLATE "C")::uuid AS first_id,
       max(last_id::text COLLATE "C")::uuid AS last_id
FROM creation_slots
WHERE ($1::timestamptz IS NULL OR slot >= backlog_slot($1::timestamptz))
  AND ($2::timestamptz IS NULL OR slot < $2::timestamptz)
