-- Declares the schedules of the kinds a worker runs (one array per column, $2 to $8; no kind
-- twice), each upserted: the latest declaration wins, its last tick, last operation and first
-- declaration kept. Declared by worker $9 at "now" ($1; NULL: the database's clock). Checks the
-- primary key of operation_schedules.
INSERT INTO operation_schedules AS s (kind, expression, timezone, missed, grace_secs, payload,
                                      next_tick, declared_at, declared_by, updated_at)
SELECT kind, expression, timezone, missed, grace_secs, payload::jsonb, next_tick,
       coalesce($1::timestamptz, now()), $9, coalesce($1::timestamptz, now())
FROM UNNEST($2::text[], $3::text[], $4::text[], $5::text[], $6::int8[], $7::text[],
            $8::timestamptz[])
    AS t(kind, expression, timezone, missed, grace_secs, payload, next_tick)
ON CONFLICT (kind) DO UPDATE
SET expression = excluded.expression, timezone = excluded.timezone, missed = excluded.missed,
    grace_secs = excluded.grace_secs, payload = excluded.payload,
    next_tick = excluded.next_tick, declared_by = excluded.declared_by,
    updated_at = excluded.updated_at
