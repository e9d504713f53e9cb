-- How many operations of the limited kinds ?1 or calling the limited dependencies ?2 (JSON
-- arrays) are running now (claims held), by kind and dependency. Walks the partial index of
-- running rows: their number is bounded by the workers' handlers and buffers.
SELECT o.kind, o.dependency, count(*) AS running
FROM operations AS o INDEXED BY operations_running_lease
WHERE o.status = 'running'
  AND (o.kind IN (SELECT value FROM json_each(?1))
       OR o.dependency IN (SELECT value FROM json_each(?2)))
GROUP BY o.kind, o.dependency
