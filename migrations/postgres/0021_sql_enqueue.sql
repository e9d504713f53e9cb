-- Rolling deploy: safe while workers run: a new table (operation_kinds), new functions and a
-- catalog change to the re-drive trigger's function; no lock on operations and no scan. The
-- previous release's workers do not publish their kinds, so oprec_enqueue refuses a kind (as
-- unknown) until a worker of this release that runs it has started; the previous release's
-- enqueues, claims and completions are unchanged.
--
-- The SQL enqueue contract: any language enqueues inside its own transaction with
--
--     SELECT oprec_enqueue(kind, payload, options) -- returns the operation's id (uuid)
--
-- with the checks and the row the Rust client makes (crates/core/src/enqueue.rs): the kind's
-- policy snapshot (attempt bound, give-up duration, the ladder's first rung, payload mode,
-- dependency), the payload limit, the idempotency key unique per kind (a repeat returns the
-- operation that holds it), delay and deadline, a UUID v7 made at enqueue. Errors are raised
-- with the SQLSTATEs of class OQ (README, "Enqueue from SQL"):
--   OQ001 unknown kind           OQ002 payload too large        OQ003 invalid payload
--   OQ004 unknown option name    OQ005 invalid option value
-- The row is inserted never woken (last_woken_at NULL): the maintenance leader's scheduler
-- publishes its wake-up on its next pass, and poll-only workers claim it on their next poll.
-- No broker is called from SQL.

-- The enqueue-time part of each kind's policy, as the workers that run the kind last published
-- it: every worker upserts a row per kind it runs when it starts, the latest publication wins.
--   max_attempts:     the policy's attempt bound (the lower of the declared bound and the
--                     schedule's length); NULL when only a deadline bounds the kind;
--   give_up_after_ms: how long after enqueue the kind gives up unless the caller gives a
--                     deadline; NULL for none;
--   first_delay_ms:   the ladder's first rung, the wait before the first attempt;
--   payload_mode:     whether the payload is a snapshot or a reference to current state;
--   dependency:       the named dependency the kind calls, unless the caller names another;
--   published_by, code_version, published_at: the worker that published the row, its
--                     application code version, and when.
CREATE TABLE operation_kinds (
    kind              text        PRIMARY KEY CHECK (length(kind) BETWEEN 1 AND 200),
    max_attempts      integer     CHECK (max_attempts > 0),
    give_up_after_ms  bigint      CHECK (give_up_after_ms > 0),
    first_delay_ms    bigint      NOT NULL CHECK (first_delay_ms >= 0),
    payload_mode      text        NOT NULL CHECK (payload_mode IN ('snapshot', 'reference')),
    dependency        text,
    published_by      text        NOT NULL,
    code_version      text,
    published_at      timestamptz NOT NULL
);

-- A UUID v7 for time `at` (RFC 9562): 48 bits of Unix milliseconds, the version, 12 bits of the
-- sub-millisecond fraction (its section 6.2, method 3: ids one session makes sort by time to
-- the microsecond), the variant and 62 random bits from gen_random_uuid(). PostgreSQL 15 has no
-- uuidv7() of its own. Ids sort by creation time, as the Rust client's do (Uuid::now_v7).
CREATE FUNCTION oprec_uuidv7(at timestamptz DEFAULT clock_timestamp()) RETURNS uuid
LANGUAGE plpgsql VOLATILE PARALLEL SAFE SET jit = off AS $$
DECLARE
    us    bigint := floor(extract(epoch FROM at) * 1000000);
    ms    bigint := floor(us / 1000.0);
    sub   integer := ((us - ms * 1000) * 4096 / 1000)::integer;
    bytes bytea := uuid_send(gen_random_uuid());
BEGIN
    IF at IS NULL OR ms < 0 OR ms >= 281474976710656 THEN
        RAISE EXCEPTION 'oprec_uuidv7: % is outside the range of a UUID v7 (1970 to 10889)', at
            USING ERRCODE = '22008';
    END IF;
    bytes := overlay(bytes PLACING substring(int8send(ms) FROM 3) FROM 1 FOR 6);
    bytes := set_byte(bytes, 6, 112 | (sub >> 8));  -- version 7, then the fraction's top 4 bits
    bytes := set_byte(bytes, 7, sub & 255);
    -- Byte 8 keeps gen_random_uuid()'s variant bits (10), the same for every RFC 9562 UUID.
    RETURN encode(bytes, 'hex')::uuid;
END
$$;

-- The size of `payload` as compact JSON text (no whitespace between tokens), in bytes: what the
-- Rust client measures (serde_json::to_vec). PostgreSQL writes jsonb with a space after every
-- ',' and ':' between tokens and none elsewhere, so the compact size is the text's, less the
-- spaces outside strings.
CREATE FUNCTION oprec_payload_bytes(payload jsonb) RETURNS bigint
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE SET jit = off AS $$
    WITH t AS (SELECT payload::text AS text),
    outside AS (SELECT regexp_replace(t.text, '"(\\.|[^"\\])*"', '', 'g') AS text FROM t)
    SELECT octet_length(t.text) - (length(outside.text) - length(replace(outside.text, ' ', '')))
    FROM t, outside
$$;

-- Enqueues one operation of `kind` in the caller's transaction and returns its id: the new
-- operation's, or, when options.idempotency_key already names an operation of the kind, that
-- one's. See the header of this file and the README.
--
-- SECURITY DEFINER: it writes with its owner's rights (the role that migrates), so that a
-- producer's role needs the right to execute it and nothing else: not the rights on operations
-- nor on the tables the triggers on operations keep (operation_counts, backlog_slots, and those
-- later migrations add), which a producer's grants would otherwise have to follow. Hence its
-- search path is pinned (below), and no role but its owner may execute it until granted
-- (GRANT EXECUTE ON FUNCTION oprec_enqueue(text, jsonb, jsonb) TO ...; README, Least privilege).
CREATE FUNCTION oprec_enqueue(kind text, payload jsonb, options jsonb DEFAULT '{}')
RETURNS uuid
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET jit = off AS $$
-- Every parameter and table is named qualified below; a bare name is a column (ON CONFLICT).
#variable_conflict use_column
DECLARE
    known_options CONSTANT text[] := ARRAY['deadline', 'delay', 'dependency', 'idempotency_key',
                                           'max_attempts', 'max_payload_bytes'];
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
                                     enqueue_params, created_at, updated_at, last_woken_at)
        VALUES (oprec_uuidv7(now_at), k.kind, idem_key, oprec_enqueue.payload, k.payload_mode,
                bound, eligible, give_up, dep, params, now_at, now_at, NULL)
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

REVOKE ALL ON FUNCTION oprec_enqueue(text, jsonb, jsonb) FROM PUBLIC;

-- Each function finds its tables in the schema it lives in, whatever the caller's search path
-- (as 0019 pins the trigger functions): a producer may call oprec.oprec_enqueue(...) from a
-- session whose search path lacks the schema. pg_temp last, so that no temporary table or
-- function of the caller's stands in for the schema's (oprec_enqueue runs with its owner's
-- rights). The re-drive trigger of 0016, which 0019
-- left out (a copy inserted from such a session failed: relation "operations" does not exist),
-- is pinned alike.
DO $$
DECLARE
    f regprocedure;
BEGIN
    FOREACH f IN ARRAY ARRAY[
        'oprec_uuidv7(timestamptz)', 'oprec_payload_bytes(jsonb)',
        'oprec_enqueue(text, jsonb, jsonb)', 'operations_mark_redriven()'
    ]::regprocedure[] LOOP
        EXECUTE format('ALTER FUNCTION %s SET search_path = %I, pg_temp', f,
                       (SELECT n.nspname FROM pg_proc p
                        JOIN pg_namespace n ON n.oid = p.pronamespace WHERE p.oid = f));
    END LOOP;
END
$$;
