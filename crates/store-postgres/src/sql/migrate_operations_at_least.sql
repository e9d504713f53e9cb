-- How many operations there are, counting no further than $1: whether the table is big enough
-- for an online index to be built concurrently. Reads at most $1 rows.
SELECT count(*) FROM (SELECT 1 FROM operations LIMIT $1) AS t
