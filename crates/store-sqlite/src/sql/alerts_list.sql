-- The alert log, newest first: rows older than ?5 (NULL: from the newest), at most ?6, of the
-- events in the JSON array ?1 and statuses ?2 (empty: all), about kind ?3 and dependency ?4
-- (NULL: any). Walks the primary key backwards; the filters are bind parameters.
SELECT * FROM alerts
WHERE (json_array_length(?1) = 0 OR event IN (SELECT value FROM json_each(?1)))
  AND (json_array_length(?2) = 0 OR status IN (SELECT value FROM json_each(?2)))
  AND (?3 IS NULL OR kind = ?3)
  AND (?4 IS NULL OR dependency = ?4)
  AND (?5 IS NULL OR id < ?5)
ORDER BY id DESC
LIMIT ?6
