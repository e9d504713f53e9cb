-- Re-drives terminal operations as new: for each of $1, a new pending operation with id from $2,
-- eligible at its time in $3, that copies kind, payload, payload mode, attempt bound, dependency
-- enqueue options, trace context and priority, links back by redrive_of, keeps the lineage's first operation as
-- redrive_root (whose id is the effect key), counts redrive_count + 1, and has the deadline
-- "now" + $5 ms when $5 is given. The old operations stay as they were but for their mark
-- redriven_as, which the insert trigger of 0016 sets. $4 is "now" (NULL: the database's clock). A parent that has a copy already (another re-drive made it meanwhile) gets no
-- second one: operations_redrive_of_once refuses it and the row is left out. Returns (old id, new
-- id, eligible time) of the copies made. Walks the primary key.
WITH now AS (SELECT coalesce($4::timestamptz, now()) AS t)
INSERT INTO operations (id, kind, payload, payload_mode, max_attempts, next_eligible_at,
                        give_up_at, dependency, enqueue_params, redrive_of, redrive_root,
                        redrive_count, created_at, updated_at, traceparent, priority)
SELECT i.new_id, o.kind, o.payload, o.payload_mode, o.max_attempts, i.at,
       now.t + $5::int8 * interval '1 millisecond', o.dependency, o.enqueue_params, o.id,
       coalesce(o.redrive_root, o.id), o.redrive_count + 1, now.t, now.t, o.traceparent,
       o.priority
FROM UNNEST($1::uuid[], $2::uuid[], $3::timestamptz[]) AS i(id, new_id, at)
JOIN operations o ON o.id = i.id
CROSS JOIN now
ON CONFLICT (redrive_of) WHERE redrive_of IS NOT NULL AND NOT redrive_duplicate DO NOTHING
RETURNING redrive_of AS from_id, id AS to_id, next_eligible_at AS at
