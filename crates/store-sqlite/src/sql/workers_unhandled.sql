-- Pending operations, per kind, whose kind no worker seen at or after ?2 handles, with how many
-- are eligible at ?1 and the oldest creation time. Walks operations_status_kind.
SELECT kind,
       count(*) AS pending,
       sum(next_eligible_at <= ?1) AS eligible,
       min(created_at) AS oldest
FROM operations
WHERE status = 'pending'
  AND kind NOT IN (SELECT k.value FROM workers AS w, json_each(w.kinds) AS k
                   WHERE w.last_seen_at >= ?2)
GROUP BY kind
ORDER BY kind
