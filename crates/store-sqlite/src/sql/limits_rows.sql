-- The kind and dependency of the operations ?1 (a JSON array of ids), for a claim to apply the
-- limits' allowance to them in its own order.
SELECT o.id, o.kind, o.dependency
FROM operations AS o
WHERE o.id IN (SELECT value FROM json_each(?1))
