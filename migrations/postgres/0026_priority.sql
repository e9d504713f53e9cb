-- Rolling deploy: safe while workers run: adds one column with a constant default (no rewrite,
-- no scan: its range check is added NOT VALID, and the rows already there hold the default) and
-- replaces oprec_enqueue with one that also takes the option priority. The previous release's
-- processes name their columns, so their enqueues store the default priority 0 and their claims
-- ignore priorities (oldest eligible first, as before); the claim of this release needs the
-- index of 0027.
--
-- priority: the claim order among eligible operations, a whole number from -2 (claimed last)
-- to 2 (claimed first), 0 by default; given at enqueue (EnqueueOptions::priority, oprec enqueue
-- --priority, the option priority of oprec_enqueue). An operation eligible for longer than the
-- aging period (core's PRIORITY_AGING, 5 minutes) is claimed before every priority, oldest
-- first, so that low priorities still run under sustained high-priority load (README,
-- "Priorities").
ALTER TABLE operations ADD COLUMN priority smallint NOT NULL DEFAULT 0;
ALTER TABLE operations ADD CONSTRAINT operations_priority_range
    CHECK (priority BETWEEN -2 AND 2) NOT VALID;

-- The SQL enqueue contract of 0023, with one more option: priority (a whole number from -2 to
-- 2; OQ005 otherwise), stored in the column above and kept in enqueue_params. Replacing the
-- function keeps its owner, its SECURITY DEFINER and its grants; its pinned search path is set
-- again below (CREATE OR REPLACE sets only the settings it names).
CREATE OR REPLACE FUNCTION oprec_enqueue(kind text, payload jsonb, options jsonb DEFAULT '{}')
RETURNS uuid
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET jit = off AS $$
-- Every parameter and table is named qualified below; a bare name is a column (ON CONFLICT).
#variable_conflict use_column
DECLARE
    known_options CONSTANT text[] := ARRAY['deadline', 'delay', 'dependency', 'idempotency_key',
                                           'max_attempts', 'max_payload_bytes', 'priority',
                                           'traceparent'];
    opts          jsonb := coalesce(oprec_enqueue.options, '{}'::jsonb);
    k             operation_kinds%ROWTYPE;
    now_at        timestamptz := clock_timestamp();
    idem_key      text;
    delay_ms      bigint;
    deadline_at   timestamptz;
    bound         bigint;
    dep           text;
    max_bytes     bigint := 262144;  -- DEFAULT_MAX_PAYLOAD_BYTES, 256 KiB
    size          bigint;
    wide          text;
    give_up       timestamptz;
    eligible      timestamptz;
    params        jsonb := '{}'::jsonb;
    v             jsonb;
    n             numeric;
    named         text;
    unknown_count integer;
    found_id      uuid;
    trace_parent  text;
    prio          smallint := 0;
BEGIN
    -- The kind, as a worker that runs it published it.
    IF oprec_enqueue.kind IS NULL THEN
        RAISE EXCEPTION 'oprec_enqueue: the kind must not be NULL' USING ERRCODE = 'OQ001';
    END IF;
    SELECT * INTO k FROM operation_kinds o WHERE o.kind = oprec_enqueue.kind;
    IF NOT FOUND THEN
        SELECT string_agg(o.kind, ', ' ORDER BY o.kind) INTO named FROM operation_kinds o;
        RAISE EXCEPTION 'oprec_enqueue: unknown kind %; known kinds: %',
                to_jsonb(oprec_enqueue.kind)::text, coalesce(named, '(none)')
            USING ERRCODE = 'OQ001',
                  DETAIL = CASE WHEN named IS NULL
                      THEN 'No worker has published its kinds to operation_kinds yet.'
                      ELSE 'A kind is known once a worker that runs it has published it to '
                           'operation_kinds.'
                  END,
                  HINT = 'Start a worker (oprec worker, or your own) that registers the kind: '
                         'every worker publishes its kinds'' policies when it starts.';
    END IF;

    -- The options: an object of known names, each with a value of its type (null: absent).
    IF jsonb_typeof(opts) <> 'object' THEN
        RAISE EXCEPTION 'oprec_enqueue: options must be a JSON object, not %', jsonb_typeof(opts)
            USING ERRCODE = 'OQ005';
    END IF;
    SELECT string_agg(to_jsonb(o)::text, ', ' ORDER BY o), count(*) INTO named, unknown_count
    FROM jsonb_object_keys(opts) AS o WHERE o <> ALL (known_options);
    IF unknown_count > 0 THEN
        RAISE EXCEPTION 'oprec_enqueue: unknown option%: %; known options: %',
                CASE WHEN unknown_count > 1 THEN 's' ELSE '' END, named,
                array_to_string(known_options, ', ')
            USING ERRCODE = 'OQ004';
    END IF;

    v := opts -> 'idempotency_key';
    IF v IS NOT NULL AND v <> 'null' THEN
        IF jsonb_typeof(v) <> 'string' THEN
            RAISE EXCEPTION 'oprec_enqueue: option idempotency_key must be a string, not %',
                    jsonb_typeof(v)
                USING ERRCODE = 'OQ005';
        END IF;
        idem_key := v #>> '{}';
        IF octet_length(idem_key) NOT BETWEEN 1 AND 1000 THEN
            RAISE EXCEPTION 'oprec_enqueue: option idempotency_key must be 1 to 1000 bytes, not %',
                    octet_length(idem_key)
                USING ERRCODE = 'OQ005';
        END IF;
        params := params || jsonb_build_object('idempotency_key', idem_key);
    END IF;

    v := opts -> 'delay';
    IF v IS NOT NULL AND v <> 'null' THEN
        IF jsonb_typeof(v) NOT IN ('number', 'string') THEN
            RAISE EXCEPTION 'oprec_enqueue: option delay must be a number of seconds or an '
                            'interval (a string), not %', jsonb_typeof(v)
                USING ERRCODE = 'OQ005';
        END IF;
        BEGIN
            n := CASE jsonb_typeof(v)
                WHEN 'number' THEN v::numeric
                ELSE extract(epoch FROM (v #>> '{}')::interval)
            END;
        EXCEPTION WHEN data_exception THEN
            RAISE EXCEPTION 'oprec_enqueue: option delay % is neither an interval (''90 seconds'', '
                            '''1h30m'', ''PT90S'') nor a number of seconds', v
                USING ERRCODE = 'OQ005';
        END;
        IF n < 0 THEN
            RAISE EXCEPTION 'oprec_enqueue: option delay must not be negative, not %', v
                USING ERRCODE = 'OQ005';
        END IF;
        IF n > 8e12 THEN  -- about 250,000 years
            RAISE EXCEPTION 'oprec_enqueue: the delay or deadline is too far in the future '
                            '(delay %)', left(v::text, 48)
                USING ERRCODE = 'OQ005';
        END IF;
        delay_ms := trunc(n * 1000);  -- milliseconds, as the Rust client keeps a delay
        params := params || jsonb_build_object('delay', trim_scale(delay_ms / 1000.0));
    END IF;

    v := opts -> 'deadline';
    IF v IS NOT NULL AND v <> 'null' THEN
        IF jsonb_typeof(v) NOT IN ('number', 'string') THEN
            RAISE EXCEPTION 'oprec_enqueue: option deadline must be a time (a string) or a '
                            'number of seconds from now, not %', jsonb_typeof(v)
                USING ERRCODE = 'OQ005';
        END IF;
        BEGIN
            deadline_at := CASE jsonb_typeof(v)
                WHEN 'string' THEN (v #>> '{}')::timestamptz
                ELSE now_at + v::numeric::float8 * interval '1 second'
            END;
        EXCEPTION WHEN datetime_field_overflow OR interval_field_overflow
                    OR numeric_value_out_of_range THEN
            RAISE EXCEPTION 'oprec_enqueue: the delay or deadline is too far in the future '
                            '(deadline %)', left(v::text, 48)
                USING ERRCODE = 'OQ005';
        WHEN data_exception THEN
            RAISE EXCEPTION 'oprec_enqueue: option deadline % is neither a time with its offset '
                            '(''2026-01-05T09:00:00Z'') nor a number of seconds from now', v
                USING ERRCODE = 'OQ005';
        END;
        IF deadline_at = 'infinity' THEN
            RAISE EXCEPTION 'oprec_enqueue: the delay or deadline is too far in the future '
                            '(deadline %)', left(v::text, 48)
                USING ERRCODE = 'OQ005';
        END IF;
        -- RFC 3339 in UTC, as the Rust client writes it (a fraction only when there is one).
        params := params || jsonb_build_object('deadline', replace(
            to_char(deadline_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
            '.000000Z', 'Z'));
    END IF;

    v := opts -> 'max_attempts';
    IF v IS NOT NULL AND v <> 'null' THEN
        IF jsonb_typeof(v) <> 'number' OR v::numeric <> trunc(v::numeric)
           OR v::numeric NOT BETWEEN 1 AND 4294967295 THEN
            RAISE EXCEPTION 'oprec_enqueue: option max_attempts must be a positive whole number '
                            '(1 to 4294967295), not %', v
                USING ERRCODE = 'OQ005';
        END IF;
        bound := v::numeric;
        params := params || jsonb_build_object('max_attempts', bound);
    END IF;

    v := opts -> 'dependency';
    IF v IS NOT NULL AND v <> 'null' THEN
        IF jsonb_typeof(v) <> 'string' THEN
            RAISE EXCEPTION 'oprec_enqueue: option dependency must be a string, not %',
                    jsonb_typeof(v)
                USING ERRCODE = 'OQ005';
        END IF;
        dep := v #>> '{}';
    ELSE
        dep := k.dependency;
    END IF;
    IF dep IS NOT NULL THEN
        params := params || jsonb_build_object('dependency', dep);
    END IF;

    v := opts -> 'max_payload_bytes';
    IF v IS NOT NULL AND v <> 'null' THEN
        IF jsonb_typeof(v) <> 'number' OR v::numeric <> trunc(v::numeric)
           OR v::numeric NOT BETWEEN 1 AND 9223372036854775807 THEN
            RAISE EXCEPTION 'oprec_enqueue: option max_payload_bytes must be a positive whole '
                            'number, not %', v
                USING ERRCODE = 'OQ005';
        END IF;
        max_bytes := v::numeric;
    END IF;

    v := opts -> 'traceparent';
    IF v IS NOT NULL AND v <> 'null' THEN
        -- The check the Rust client makes (crates/core/src/trace_parent.rs): version 00, a
        -- trace id and a parent id in lowercase hex, neither all zeros, and two hex flags.
        IF jsonb_typeof(v) <> 'string'
           OR (v #>> '{}') !~ '^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$'
           OR substr(v #>> '{}', 4, 32) = repeat('0', 32)
           OR substr(v #>> '{}', 37, 16) = repeat('0', 16) THEN
            RAISE EXCEPTION 'oprec_enqueue: option traceparent % is not a W3C trace context; '
                            'expected 00-<32 hex digits>-<16 hex digits>-<2 hex digits>, such as '
                            '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
                    left(v::text, 80)
                USING ERRCODE = 'OQ005';
        END IF;
        trace_parent := v #>> '{}';
        params := params || jsonb_build_object('traceparent', trace_parent);
    END IF;

    v := opts -> 'priority';
    IF v IS NOT NULL AND v <> 'null' THEN
        -- The levels core allows (crates/core/src/priority.rs): a whole number from -2 to 2.
        IF jsonb_typeof(v) <> 'number' OR v::numeric <> trunc(v::numeric)
           OR v::numeric NOT BETWEEN -2 AND 2 THEN
            RAISE EXCEPTION 'oprec_enqueue: option priority must be a whole number from -2 '
                            '(claimed last) to 2 (claimed first), not %', left(v::text, 48)
                USING ERRCODE = 'OQ005';
        END IF;
        prio := v::numeric;
        params := params || jsonb_build_object('priority', prio);
    END IF;

    -- The payload: JSON, within the limit, every integer one a 64-bit reader keeps exact.
    IF oprec_enqueue.payload IS NULL THEN
        RAISE EXCEPTION 'oprec_enqueue: the payload must not be NULL (''null''::jsonb is a JSON '
                        'null)'
            USING ERRCODE = 'OQ003';
    END IF;
    -- The text is never smaller than the compact JSON: most payloads are measured no further.
    IF octet_length(oprec_enqueue.payload::text) > max_bytes THEN
        size := oprec_payload_bytes(oprec_enqueue.payload);
        IF size > max_bytes THEN
            RAISE EXCEPTION 'oprec_enqueue: payload is % bytes, over the limit of % bytes; store '
                            'large inputs elsewhere and enqueue a reference', size, max_bytes
                USING ERRCODE = 'OQ002';
        END IF;
    END IF;
    -- Only an integer of 19 digits or more can be out of range: most payloads have none.
    IF oprec_enqueue.payload::text ~ '[0-9]{19}' THEN
        SELECT x::text INTO wide
        FROM jsonb_path_query(oprec_enqueue.payload, 'strict $.**') AS x
        WHERE jsonb_typeof(x) = 'number' AND x::numeric = trunc(x::numeric)
          AND x::numeric NOT BETWEEN -9223372036854775808 AND 18446744073709551615
        LIMIT 1;
        IF wide IS NOT NULL THEN
            RAISE EXCEPTION 'oprec_enqueue: the payload holds the integer %, wider than 64 bits: '
                            'a worker would read it as an approximate floating-point number; '
                            'send it as a string to keep it exact', left(wide, 48)
                USING ERRCODE = 'OQ003';
        END IF;
    END IF;

    -- The row, as the Rust client makes it (NewOperation).
    BEGIN
        give_up := coalesce(deadline_at, now_at + k.give_up_after_ms * interval '1 millisecond');
        eligible := now_at + (coalesce(delay_ms, 0) + k.first_delay_ms) * interval '1 millisecond';
    EXCEPTION WHEN datetime_field_overflow OR interval_field_overflow THEN
        RAISE EXCEPTION 'oprec_enqueue: the delay or deadline is too far in the future'
            USING ERRCODE = 'OQ005';
    END;
    IF give_up <= now_at THEN
        RAISE EXCEPTION 'oprec_enqueue: deadline % is not in the future', give_up
            USING ERRCODE = 'OQ005';
    END IF;
    -- The policy is the ceiling: a caller's bound only lowers it (least() skips NULLs), and a
    -- bound past the column's range is as good as none.
    bound := least(bound, k.max_attempts);
    IF bound > 2147483647 THEN
        bound := 2147483647;
    END IF;

    FOR tries IN 1..3 LOOP
        INSERT INTO operations AS o (id, kind, idempotency_key, payload, payload_mode,
                                     max_attempts, next_eligible_at, give_up_at, dependency,
                                     enqueue_params, created_at, updated_at, last_woken_at,
                                     traceparent, priority)
        VALUES (oprec_uuidv7(now_at), k.kind, idem_key, oprec_enqueue.payload, k.payload_mode,
                bound, eligible, give_up, dep, params, now_at, now_at, NULL, trace_parent,
                prio)
        ON CONFLICT (kind, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
        RETURNING o.id INTO found_id;
        IF found_id IS NOT NULL THEN
            RETURN found_id;
        END IF;
        -- Only the idempotency key can have stopped the insert: the operation that holds it.
        SELECT o.id INTO found_id FROM operations o
        WHERE o.kind = k.kind AND o.idempotency_key = idem_key;
        IF found_id IS NOT NULL THEN
            RETURN found_id;
        END IF;
        -- It was removed (retention, archive) between the two statements: insert again.
    END LOOP;
    RAISE EXCEPTION 'oprec_enqueue: the operation holding idempotency key % kept changing; retry',
            to_jsonb(idem_key)::text
        USING ERRCODE = '40001';
END
$$;

DO $$
BEGIN
    EXECUTE format('ALTER FUNCTION oprec_enqueue(text, jsonb, jsonb) SET search_path = %I, pg_temp',
                   (SELECT n.nspname FROM pg_proc p
                    JOIN pg_namespace n ON n.oid = p.pronamespace
                    WHERE p.oid = 'oprec_enqueue(text, jsonb, jsonb)'::regprocedure));
END
$$;
