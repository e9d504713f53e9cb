-- Publishes the enqueue-time policies of the kinds a worker runs (?1: a JSON array of objects
-- with kind, max_attempts, give_up_after_ms, first_delay_ms, payload_mode and dependency; no
-- kind twice), each upserted: the latest publication of a kind wins. Published by worker ?2
-- (code version ?3) at ?4. `WHERE true` settles SQLite's parsing ambiguity between a join's ON
-- and the upsert's ON CONFLICT. Checks the primary key of operation_kinds.
INSERT INTO operation_kinds (kind, max_attempts, give_up_after_ms, first_delay_ms, payload_mode,
                             dependency, published_by, code_version, published_at)
SELECT j.value ->> '$.kind', j.value ->> '$.max_attempts', j.value ->> '$.give_up_after_ms',
       j.value ->> '$.first_delay_ms', j.value ->> '$.payload_mode', j.value ->> '$.dependency',
       ?2, ?3, ?4
FROM json_each(?1) AS j
WHERE true
ON CONFLICT (kind) DO UPDATE
SET max_attempts = excluded.max_attempts, give_up_after_ms = excluded.give_up_after_ms,
    first_delay_ms = excluded.first_delay_ms, payload_mode = excluded.payload_mode,
    dependency = excluded.dependency, published_by = excluded.published_by,
    code_version = excluded.code_version, published_at = excluded.published_at
