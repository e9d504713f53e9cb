-- Publishes the enqueue-time policies of the kinds a worker runs (one array per column, $2 to
-- $7; no kind twice), each upserted: the latest publication of a kind wins. Published by worker
-- $8 (code version $9) at "now" ($1; NULL: the database's clock). Checks the primary key of
-- operation_kinds.
INSERT INTO operation_kinds AS k (kind, max_attempts, give_up_after_ms, first_delay_ms,
                                  payload_mode, dependency, published_by, code_version,
                                  published_at)
SELECT kind, max_attempts, give_up_after_ms, first_delay_ms, payload_mode, dependency, $8, $9,
       coalesce($1::timestamptz, now())
FROM UNNEST($2::text[], $3::int4[], $4::int8[], $5::int8[], $6::text[], $7::text[])
    AS t(kind, max_attempts, give_up_after_ms, first_delay_ms, payload_mode, dependency)
ON CONFLICT (kind) DO UPDATE
SET max_attempts = excluded.max_attempts, give_up_after_ms = excluded.give_up_after_ms,
    first_delay_ms = excluded.first_delay_ms, payload_mode = excluded.payload_mode,
    dependency = excluded.dependency, published_by = excluded.published_by,
    code_version = excluded.code_version, published_at = excluded.published_at
