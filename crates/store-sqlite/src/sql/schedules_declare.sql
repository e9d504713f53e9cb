-- Declares the schedules of the kinds a worker runs (?1: a JSON array of objects with kind,
-- expression, timezone, missed, grace_secs, payload (JSON text) and next_tick; no kind twice),
-- each upserted: the latest declaration wins, its last tick, last operation and first
-- declaration kept. Declared by worker ?2 at ?3. `WHERE true` settles SQLite's parsing
-- ambiguity between a join's ON and the upsert's ON CONFLICT. Checks the primary key of
-- operation_schedules.
INSERT INTO operation_schedules (kind, expression, timezone, missed, grace_secs, payload,
                                 next_tick, declared_at, declared_by, updated_at)
SELECT j.value ->> '$.kind', j.value ->> '$.expression', j.value ->> '$.timezone',
       j.value ->> '$.missed', j.value ->> '$.grace_secs', j.value ->> '$.payload',
       j.value ->> '$.next_tick', ?3, ?2, ?3
FROM json_each(?1) AS j
WHERE true
ON CONFLICT (kind) DO UPDATE
SET expression = excluded.expression, timezone = excluded.timezone, missed = excluded.missed,
    grace_secs = excluded.grace_secs, payload = excluded.payload,
    next_tick = excluded.next_tick, declared_by = excluded.declared_by,
    updated_at = excluded.updated_at
