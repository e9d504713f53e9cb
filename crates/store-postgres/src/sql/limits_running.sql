-- How many operations of the limited kinds $1 or calling the limited dependencies $2 are
-- running now (claims held), grouped by kind and dependency, as JSON ([[kind, dependency, n],
-- ...]), and the database's clock read after the limits were locked (clock_timestamp, not the
-- transaction's start, so that a claim that waited for the lock counts the starts made
-- meanwhile). Walks a partial index of running rows (their number is bounded by the fleet's
-- handlers and buffers), whatever the statistics say.
SELECT clock_timestamp() AS now,
       coalesce((SELECT json_agg(json_build_array(g.kind, g.dependency, g.n))::text
                 FROM (SELECT kind, dependency, count(*) AS n
                       FROM operations
                       WHERE status = 'running'
                         AND (kind = ANY($1) OR dependency = ANY($2))
                       GROUP BY kind, dependency) AS g), '[]') AS running
