-- Pending operations, per kind, whose kind no worker seen at or after ?2 handles: how many (from
-- the trigger-kept operation_counts), how many of the oldest ?3 are eligible at ?1, how many of
-- those were read, and the earliest creation time among them. Reads at most ?3 rows of each such
-- kind (its first entries in operations_status_kind, in id order: UUID v7 ids made at enqueue),
-- however large its backlog, and reads them once: SQLite has no lateral join, so the three
-- figures leave the one correlated subquery as a JSON array, and the CTE is materialized so that
-- SQLite does not copy that subquery into each of the four uses below.
WITH unhandled AS (
    SELECT c.kind, sum(c.operations) AS pending
    FROM operation_counts AS c
    WHERE c.status = 'pending'
      AND c.kind NOT IN (SELECT k.value FROM workers AS w, json_each(w.kinds) AS k
                         WHERE w.last_seen_at >= ?2)
    GROUP BY c.kind
    HAVING sum(c.operations) > 0
),
figures AS MATERIALIZED (
    SELECT u.kind, u.pending,
           (SELECT json_array(count(*), coalesce(sum(f.next_eligible_at <= ?1), 0),
                              min(f.created_at))
            FROM (SELECT o.next_eligible_at, o.created_at FROM operations AS o
                  WHERE o.status = 'pending' AND o.kind = u.kind
                  ORDER BY o.id LIMIT ?3) AS f) AS f
    FROM unhandled AS u
)
SELECT kind, pending,
       json_extract(f, '$[1]') AS eligible,
       json_extract(f, '$[0]') AS scanned,
       json_extract(f, '$[2]') AS oldest
FROM figures
WHERE json_extract(f, '$[0]') > 0
ORDER BY kind
