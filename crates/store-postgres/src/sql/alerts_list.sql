-- The alert log, newest first: rows older than $5 (NULL: from the newest), at most $6, of the
-- events $1 and statuses $2 (empty: all), about kind $3 and dependency $4 (NULL: any). Walks the
-- primary key backwards; the filters are bind parameters.
SELECT * FROM alerts
WHERE (cardinality($1::text[]) = 0 OR event = ANY($1))
  AND (cardinality($2::text[]) = 0 OR status = ANY($2))
  AND ($3::text IS NULL OR kind = $3)
  AND ($4::text IS NULL OR dependency = $4)
  AND ($5::int8 IS NULL OR id < $5)
ORDER BY id DESC
LIMIT $6
