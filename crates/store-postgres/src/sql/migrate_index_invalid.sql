-- Whether the index named $1 (on the search path, as the migrations name it) is there but
-- invalid: a concurrent build that failed or was interrupted half-way leaves one. Reads the
-- catalog.
SELECT coalesce((SELECT NOT i.indisvalid FROM pg_index i WHERE i.indexrelid = to_regclass($1)),
                false)
