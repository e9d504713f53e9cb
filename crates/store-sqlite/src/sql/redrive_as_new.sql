-- Re-drives picked terminal operations as new: ?3 is a JSON array of {from, to, at}. Each gets a
-- new pending operation `to`, eligible at `at`, with the original's kind, payload, payload mode,
-- attempt bound, dependency, enqueue parameters and trace context, no idempotency key, the deadline ?2 (NULL
-- for none), redrive_of set, the lineage's first operation kept as redrive_root (whose id is the
-- effect key) and one more re-drive counted, created at ?1; the original stays as it was but for its
-- mark redriven_as, which the insert trigger of 0016 sets. A parent
-- that has a copy already gets no second one (operations_redrive_of_once). Looks each original up
-- by primary key; returns the ids of the copies made.
INSERT INTO operations (id, kind, payload, payload_mode, max_attempts, next_eligible_at,
                        give_up_at, dependency, enqueue_params, redrive_of, redrive_root,
                        redrive_count, created_at, updated_at, traceparent, priority)
SELECT i.value ->> 'to', o.kind, o.payload, o.payload_mode, o.max_attempts, i.value ->> 'at',
       ?2, o.dependency, o.enqueue_params, o.id, coalesce(o.redrive_root, o.id),
       o.redrive_count + 1, ?1, ?1, o.traceparent, o.priority
FROM json_each(?3) AS i
JOIN operations AS o ON o.id = i.value ->> 'from'
WHERE true
ON CONFLICT (redrive_of) WHERE redrive_of IS NOT NULL AND redrive_duplicate = 0 DO NOTHING
RETURNING id
