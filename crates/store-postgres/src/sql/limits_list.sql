-- Every limit, by scope and name, with how many of its operations are running now (walking the
-- partial index of running rows once per limit: running rows are few).
SELECT l.scope, l.value, l.max_running, l.per_second, l.recent_starts, l.reason, l.actor,
       l.set_at,
       (SELECT count(*) FROM operations o
        WHERE o.status = 'running'
          AND CASE l.scope WHEN 'kind' THEN o.kind = l.value ELSE o.dependency = l.value END
       ) AS running
FROM operation_limits l
ORDER BY l.scope, l.value
