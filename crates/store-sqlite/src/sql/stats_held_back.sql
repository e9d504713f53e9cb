-- The eligible pending operations one control holds back at ?1: ?2 is its value, and its scope's
-- rule (ControlScope::matches_sql) stands in for /*covers*/. INDEXED BY
-- operations_pending_eligible, walked in order: it stops after ?3 matches, so a hold over a large
-- backlog costs a bounded walk; returns how many it met (up to ?3) and the first of them, the one
-- eligible longest.
WITH held AS (
    SELECT o.id, o.kind, o.next_eligible_at
    FROM operations AS o INDEXED BY operations_pending_eligible
    WHERE o.status = 'pending' AND o.next_eligible_at <= ?1 AND /*covers*/
    ORDER BY o.next_eligible_at, o.id
    LIMIT ?3
)
SELECT (SELECT count(*) FROM held) AS eligible, first.id, first.kind, first.next_eligible_at
FROM (SELECT 1) AS one
LEFT JOIN (SELECT * FROM held ORDER BY next_eligible_at, id LIMIT 1) AS first ON true
