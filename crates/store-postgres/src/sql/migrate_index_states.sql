-- The online indexes among $1 (names on the search path, as the migrations give them) that are
-- there, each with whether it is valid: a concurrent build that failed or was interrupted
-- half-way leaves an invalid one. An index not there has no row. Reads the catalog only, so a
-- migrate of an up-to-date schema takes no lock on a table (read.rs, `online_index`).
SELECT n AS name, i.indisvalid AS valid
FROM unnest($1::text[]) AS n
JOIN pg_index i ON i.indexrelid = to_regclass(n)
