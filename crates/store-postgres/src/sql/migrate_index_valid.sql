-- Whether the index named $1 (on the search path, as the migrations name it) is there and valid:
-- an online migration's index already built. Reads the catalog only, so that a process starting
-- against a migrated schema takes no lock on the table (building it again with `IF NOT EXISTS`
-- would wait for a SHARE lock first, behind every open write transaction, with every later
-- writer queued behind it).
SELECT coalesce((SELECT i.indisvalid FROM pg_index i WHERE i.indexrelid = to_regclass($1)),
                false)
