//! The triggers on oprec's tables behave the same whatever their caller's planner settings.

mod common;

/// Every trigger function turns JIT compilation off for itself. A trigger's statements are
/// planned with the caller's settings: under the claim's `enable_sort = off` the count upsert's
/// sort is priced at 10^10, far above `jit_above_cost`, and PostgreSQL compiled it on every claim
/// (about 180 ms per claim of 1,000, a drain five times slower).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trigger_functions_never_compile_their_statements() {
    let store = common::fresh_store(1).await;
    let functions: Vec<(String, String, Option<Vec<String>>)> = sqlx::query_as(
        "SELECT c.relname::text, p.proname::text, p.proconfig
         FROM pg_trigger t
         JOIN pg_class c ON c.oid = t.tgrelid
         JOIN pg_proc p ON p.oid = t.tgfoid
         WHERE NOT t.tgisinternal AND c.relnamespace = current_schema()::regnamespace
         ORDER BY 1, 2",
    )
    .fetch_all(store.pool())
    .await
    .expect("triggers");
    // The count and backlog-slot triggers (insert, update, delete, truncate on operations) and
    // the attempts' per-minute trigger, at least: an empty list would prove nothing.
    assert!(functions.len() >= 9, "triggers found: {functions:?}");
    for (table, function, config) in &functions {
        assert!(
            config
                .as_deref()
                .unwrap_or_default()
                .iter()
                .any(|c| c == "jit=off"),
            "the trigger function {function}() on {table} does not set jit = off: {config:?}"
        );
    }
}

/// Every trigger function finds its tables in its own schema whatever the caller's search path:
/// an operator's statements through schema-qualified names, from a session with the default
/// search path, fire the count and per-minute triggers and change the counts they keep.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn triggers_work_from_a_session_without_their_schema_on_its_path() {
    let store = common::fresh_store(1).await;
    let schema: String = sqlx::query_scalar("SELECT current_schema()::text")
        .fetch_one(store.pool())
        .await
        .expect("schema");
    assert_ne!(
        schema, "public",
        "the test needs a schema off the default path"
    );
    let operator = sqlx::PgPool::connect(&common::database_url())
        .await
        .expect("connect with the default search path");
    let path: String = sqlx::query_scalar("SHOW search_path")
        .fetch_one(&operator)
        .await
        .expect("search path");
    assert!(!path.contains(&schema), "{path}");
    let id = uuid::Uuid::now_v7();
    for statement in [
        format!(
            "INSERT INTO {schema}.operations (id, kind, payload, next_eligible_at, created_at, \
             updated_at, dependency) VALUES ($1, 'k', '{{}}', now(), now(), now(), 'dep')"
        ),
        format!("UPDATE {schema}.operations SET status = 'held' WHERE id = $1"),
        format!(
            "INSERT INTO {schema}.operation_attempts (operation_id, attempt, claimed_at, \
             ended_at, outcome) VALUES ($1, 1, now(), now(), 'error')"
        ),
    ] {
        sqlx::query(sqlx::AssertSqlSafe(statement.clone()))
            .bind(id)
            .execute(&operator)
            .await
            .unwrap_or_else(|e| panic!("{statement}: {e}"));
    }
    let held: i64 = sqlx::query_scalar(
        "SELECT coalesce(sum(operations), 0)::int8 FROM operation_counts
         WHERE kind = 'k' AND status = 'held'",
    )
    .fetch_one(store.pool())
    .await
    .expect("counts");
    assert_eq!(held, 1, "the update was counted in the operation's schema");
    let waiting: i64 =
        sqlx::query_scalar("SELECT coalesce(sum(operations), 0)::int8 FROM backlog_slots")
            .fetch_one(store.pool())
            .await
            .expect("backlog slots");
    assert_eq!(waiting, 1, "the insert was counted in its creation slot");
    let failed: i64 = sqlx::query_scalar(
        "SELECT coalesce(sum(failed), 0)::int8 FROM attempt_minutes WHERE dependency = 'dep'",
    )
    .fetch_one(store.pool())
    .await
    .expect("minutes");
    assert_eq!(
        failed, 1,
        "the attempt was counted in the operation's schema"
    );
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "DELETE FROM {schema}.operations WHERE id = $1"
    )))
    .bind(id)
    .execute(&operator)
    .await
    .expect("delete through a qualified name");
    let left: i64 = sqlx::query_scalar(
        "SELECT coalesce(sum(operations), 0)::int8 FROM operation_counts WHERE kind = 'k'",
    )
    .fetch_one(store.pool())
    .await
    .expect("counts");
    assert_eq!(left, 0, "the delete was counted out");
    let waiting: i64 =
        sqlx::query_scalar("SELECT coalesce(sum(operations), 0)::int8 FROM backlog_slots")
            .fetch_one(store.pool())
            .await
            .expect("backlog slots");
    assert_eq!(
        waiting, 0,
        "the delete was counted out of its creation slot"
    );
    let attempts: i64 = sqlx::query_scalar("SELECT count(*) FROM operation_attempts")
        .fetch_one(store.pool())
        .await
        .expect("attempts");
    assert_eq!(attempts, 0, "the operation's attempts went with it");
    operator.close().await;
}

/// An operation's attempts go with it whoever removes it, by the statement trigger of 0037 (the
/// foreign key it replaced checked every attempt recorded): a DELETE of some operations removes
/// their attempts and only theirs, and a TRUNCATE of operations empties the attempts. No foreign
/// key checks the attempts a completion records.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn removed_operations_take_their_attempts_and_only_theirs() {
    let store = common::fresh_store(1).await;
    let keys: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM pg_constraint
         WHERE conrelid = 'operation_attempts'::regclass AND contype = 'f'",
    )
    .fetch_one(store.pool())
    .await
    .expect("constraints");
    assert_eq!(keys, 0, "a foreign key checks every attempt recorded");
    let ids: Vec<uuid::Uuid> = (0..6).map(|_| uuid::Uuid::now_v7()).collect();
    sqlx::query(
        "INSERT INTO operations (id, kind, payload, status, terminal_reason, next_eligible_at,
                                 created_at, updated_at, terminal_at)
         SELECT id, 'k', '{}', 'dead', 'permanent', now(), now(), now(), now()
         FROM unnest($1::uuid[]) AS id",
    )
    .bind(&ids)
    .execute(store.pool())
    .await
    .expect("operations");
    // Three attempts each.
    sqlx::query(
        "INSERT INTO operation_attempts (operation_id, attempt, claimed_at, ended_at, outcome)
         SELECT id, n, now(), now(), 'error' FROM unnest($1::uuid[]) AS id,
                generate_series(1, 3) AS n",
    )
    .bind(&ids)
    .execute(store.pool())
    .await
    .expect("attempts");
    let removed = &ids[..4];
    let gone = sqlx::query("DELETE FROM operations WHERE id = ANY($1)")
        .bind(removed)
        .execute(store.pool())
        .await
        .expect("delete")
        .rows_affected();
    assert_eq!(gone, 4);
    let left: Vec<(uuid::Uuid, i64)> = sqlx::query_as(
        "SELECT operation_id, count(*) FROM operation_attempts GROUP BY 1 ORDER BY 1",
    )
    .fetch_all(store.pool())
    .await
    .expect("attempts left");
    assert_eq!(
        left,
        vec![(ids[4], 3), (ids[5], 3)],
        "the removed operations' attempts, and only theirs, went"
    );
    sqlx::query("TRUNCATE operations, operation_steps")
        .execute(store.pool())
        .await
        .expect("truncate");
    let left: i64 = sqlx::query_scalar("SELECT count(*) FROM operation_attempts")
        .fetch_one(store.pool())
        .await
        .expect("attempts");
    assert_eq!(
        left, 0,
        "a truncate of the operations empties their attempts"
    );
}

/// Every PL/pgSQL function oprec defines in its schema (the triggers') and every function of the
/// SQL enqueue contract (`oprec_*`, migration 0021) turns JIT off for itself and finds its tables
/// in its own schema whatever the caller's search path: a producer calling `oprec_enqueue` plans
/// its statements with its own settings, from a session whose path may lack the schema. (A
/// plain SQL helper that reads no table, such as `backlog_slot`, stays inlinable without them.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_function_turns_jit_off_and_pins_its_schema() {
    let store = common::fresh_store(1).await;
    let schema: String = sqlx::query_scalar("SELECT current_schema()::text")
        .fetch_one(store.pool())
        .await
        .expect("schema");
    let functions: Vec<(String, Option<Vec<String>>)> = sqlx::query_as(
        "SELECT p.oid::regprocedure::text, p.proconfig FROM pg_proc p
         JOIN pg_language l ON l.oid = p.prolang
         WHERE p.pronamespace = current_schema()::regnamespace
           AND (l.lanname = 'plpgsql' OR p.proname LIKE 'oprec\\_%')
         ORDER BY 1",
    )
    .fetch_all(store.pool())
    .await
    .expect("functions");
    let names: Vec<&str> = functions.iter().map(|(f, _)| f.as_str()).collect();
    for expected in [
        "oprec_enqueue(text,jsonb,jsonb)",
        "oprec_uuidv7(timestamp with time zone)",
        "oprec_payload_bytes(jsonb)",
        "operations_mark_redriven()",
        "operations_inserted()",
        "operations_updated()",
    ] {
        assert!(names.contains(&expected), "{expected} not among {names:?}");
    }
    for (function, config) in &functions {
        let config = config.as_deref().unwrap_or_default();
        assert!(
            config.iter().any(|c| c == "jit=off"),
            "{function} does not set jit = off: {config:?}"
        );
        assert!(
            config.iter().any(|c| c == &format!("search_path={schema}")
                || c.starts_with(&format!("search_path={schema}, "))),
            "{function} does not pin its schema's search path: {config:?}"
        );
    }
}

/// A re-drive copy inserted through the schema-qualified name from a session without the schema
/// on its path marks its original (the 0016 trigger, pinned by 0021).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_redrive_trigger_works_from_a_session_without_its_schema_on_its_path() {
    let store = common::fresh_store(1).await;
    let schema: String = sqlx::query_scalar("SELECT current_schema()::text")
        .fetch_one(store.pool())
        .await
        .expect("schema");
    let operator = sqlx::PgPool::connect(&common::database_url())
        .await
        .expect("connect with the default search path");
    let (original, copy) = (uuid::Uuid::now_v7(), uuid::Uuid::now_v7());
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "INSERT INTO {schema}.operations (id, kind, payload, status, terminal_reason, \
         next_eligible_at, created_at, updated_at, terminal_at) \
         VALUES ($1, 'k', '{{}}', 'dead', 'permanent', now(), now(), now(), now())"
    )))
    .bind(original)
    .execute(&operator)
    .await
    .expect("the original");
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "INSERT INTO {schema}.operations (id, kind, payload, next_eligible_at, created_at, \
         updated_at, redrive_of) VALUES ($1, 'k', '{{}}', now(), now(), now(), $2)"
    )))
    .bind(copy)
    .bind(original)
    .execute(&operator)
    .await
    .expect("the copy, through the qualified name");
    operator.close().await;
    let marked: Option<uuid::Uuid> =
        sqlx::query_scalar("SELECT redriven_as FROM operations WHERE id = $1")
            .bind(original)
            .fetch_one(store.pool())
            .await
            .expect("original");
    assert_eq!(marked, Some(copy));
}

/// A schema whose name needs quoting (capitals, a hyphen) migrates, and its triggers find their
/// tables: an operation promoted to dead is counted in the deaths per minute (migration 0031's
/// pinned search path once quoted such a name twice, and every promotion failed).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn triggers_work_in_a_schema_whose_name_needs_quoting() {
    use oprec_core::Store;
    use sqlx::postgres::PgConnectOptions;
    let url = common::database_url();
    let schema = format!("Oprec-Test-{}", uuid::Uuid::now_v7().simple());
    let admin = oprec_postgres::PgStore::connect(&url)
        .await
        .expect("connect");
    sqlx::query(sqlx::AssertSqlSafe(format!("CREATE SCHEMA \"{schema}\"")))
        .execute(admin.pool())
        .await
        .expect("create schema");
    let options: PgConnectOptions = url.parse().expect("database url");
    let quoted = format!("\"{schema}\"");
    let store = oprec_postgres::PgStore::connect_with(
        options.options([("search_path", quoted.as_str())]),
        1,
    )
    .await
    .expect("connect");
    store
        .migrate()
        .await
        .expect("migrate a schema whose name needs quoting");
    let id = uuid::Uuid::now_v7();
    sqlx::query(
        "INSERT INTO operations (id, kind, payload, next_eligible_at, created_at, updated_at) \
         VALUES ($1, 'k', '{}', now(), now(), now())",
    )
    .bind(id)
    .execute(store.pool())
    .await
    .expect("insert");
    sqlx::query(
        "UPDATE operations SET status = 'dead', terminal_reason = 'operator', terminal_at = now() \
         WHERE id = $1",
    )
    .bind(id)
    .execute(store.pool())
    .await
    .expect("a promotion to dead");
    let dead: i64 = sqlx::query_scalar("SELECT coalesce(sum(dead), 0)::int8 FROM dead_minutes")
        .fetch_one(store.pool())
        .await
        .expect("dead minutes");
    assert_eq!(dead, 1);
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "DROP SCHEMA \"{schema}\" CASCADE"
    )))
    .execute(admin.pool())
    .await
    .expect("drop schema");
}

/// The slot of a creation time (`backlog_slot()`, migrations 0020 and 0035) is inlined into the
/// statements that call it: the backlog triggers call it for every row an enqueue, a claim or a
/// completion writes, and a call of a SQL function that is not inlined costs microseconds a row
/// (5.6 ms of each claim of about 600 before 0035). PostgreSQL inlines it only while its body is no
/// more volatile than it is declared (IMMUTABLE). Its slots are the ones the body before 0035
/// computed from the session's time zone, in every zone whose offset is a multiple of five
/// minutes, across a change of daylight saving time and on either side of each boundary.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_slot_of_a_creation_time_is_inlined_and_the_same_in_every_zone() {
    let store = common::fresh_store(1).await;
    let mut conn = store.pool().acquire().await.expect("connection");
    let plan: Vec<String> = sqlx::query_scalar(
        "EXPLAIN (VERBOSE, COSTS OFF)
         SELECT backlog_slot(t)
         FROM generate_series(now(), now() + interval '1 hour', interval '1 minute') AS g(t)",
    )
    .fetch_all(&mut *conn)
    .await
    .expect("plan");
    let plan = plan.join("\n");
    assert!(
        plan.contains("date_bin") && !plan.contains("backlog_slot"),
        "backlog_slot() is called, not inlined:\n{plan}"
    );
    for zone in [
        "UTC",
        "Europe/Berlin",
        "America/St_Johns",
        "Asia/Kathmandu",
        "Australia/Eucla",
        "Pacific/Chatham",
    ] {
        sqlx::query("SELECT set_config('TimeZone', $1, false)")
            .bind(zone)
            .execute(&mut *conn)
            .await
            .expect("time zone");
        // Every 5-minute boundary of two days around Europe's change to summer time (and
        // America/St_Johns' and Chatham's own), a microsecond before it, and 37 s after it.
        let (times, differ): (i64, i64) = sqlx::query_as(
            "SELECT count(*), count(*) FILTER (
                 WHERE backlog_slot(t) <> date_trunc('hour', t)
                                          + floor(extract(minute FROM t) / 5) * interval '5 minutes')
             FROM generate_series(timestamptz '2026-03-28 00:00:00+00',
                                  timestamptz '2026-03-30 00:00:00+00', interval '5 minutes') AS b(at),
                  LATERAL (VALUES (b.at), (b.at - interval '1 microsecond'),
                                  (b.at + interval '37 seconds')) AS v(t)",
        )
        .fetch_one(&mut *conn)
        .await
        .expect("slots");
        assert_eq!(times, 3 * 577, "{zone}");
        assert_eq!(differ, 0, "{zone}: slots differ from the old body's");
    }
}

/// The bookkeeping tables carry no CHECK constraints since 0042 (PostgreSQL compiled them in
/// every trigger call), so what they held must follow from the triggers themselves: writes from
/// several sessions (each its own shard), in a time zone 5:45 from UTC, of operations created
/// across several slots and an hour back, then claimed, failed and ended, leave slots on
/// five-minute boundaries of UTC, shards 0-15, ranges in order, and only the contract's statuses
/// and failure classes, counted as the operations are. The CHECKs of operations still refuse a
/// status outside the contract.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bookkeeping_holds_what_its_dropped_checks_held() {
    let store = common::fresh_store(3).await;
    let pool = store.pool();
    let checks: Vec<(String, i64)> = sqlx::query_as(
        "SELECT c.relname::text, count(k.oid)
         FROM pg_class c LEFT JOIN pg_constraint k ON k.conrelid = c.oid AND k.contype = 'c'
         WHERE c.relnamespace = current_schema()::regnamespace
           AND c.relname IN ('operations', 'operation_counts', 'backlog_slots', 'creation_slots')
         GROUP BY 1 ORDER BY 1",
    )
    .fetch_all(pool)
    .await
    .expect("constraints");
    let checks: std::collections::HashMap<String, i64> = checks.into_iter().collect();
    assert_eq!(checks.len(), 4, "{checks:?}");
    assert!(checks["operations"] >= 19, "{checks:?}");
    for table in ["operation_counts", "backlog_slots", "creation_slots"] {
        assert_eq!(checks[table], 0, "{table} has CHECKs again: {checks:?}");
    }

    // Three sessions held open together, so three backends (shards), each inserting operations
    // created from 70 minutes ago to now (ids v4, outside every slot's range of v7 ids), one
    // statement a minute of creation time.
    let mut sessions = Vec::new();
    for _ in 0..3 {
        let mut conn = pool.acquire().await.expect("connection");
        sqlx::query("SET TimeZone = 'Asia/Kathmandu'")
            .execute(&mut *conn)
            .await
            .expect("time zone");
        sessions.push(conn);
    }
    for (s, conn) in sessions.iter_mut().enumerate() {
        for minute in 0..70 {
            sqlx::query(
                "INSERT INTO operations (id, kind, payload, next_eligible_at, created_at,
                                         updated_at)
                 SELECT gen_random_uuid(), 'k' || $1, '{}', now(), t, t
                 FROM (SELECT now() - $2 * interval '1 minute' + n * interval '7 seconds' AS t
                       FROM generate_series(0, 3) AS n) AS g",
            )
            .bind(s as i32)
            .bind(minute)
            .execute(&mut **conn)
            .await
            .expect("insert");
        }
    }
    // Some claimed, some of those failed back to pending, some ended each way.
    let claim = "UPDATE operations SET status = 'running', attempt = attempt + 1,
                             claim_token = gen_random_uuid(), lease_until = now() + interval '1 minute',
                             claimed_at = now()
                         WHERE id IN (SELECT id FROM operations WHERE status = 'pending'
                                      ORDER BY id LIMIT 300)";
    sqlx::query(claim)
        .execute(&mut *sessions[0])
        .await
        .expect("claim");
    for (statement, session) in [
        (
            "UPDATE operations SET status = 'pending', claim_token = NULL, lease_until = NULL,
                 last_failure_class = 'rate_limited'
             WHERE id IN (SELECT id FROM operations WHERE status = 'running' ORDER BY id LIMIT 50)",
            1,
        ),
        (
            "UPDATE operations SET status = 'succeeded', claim_token = NULL, lease_until = NULL,
                 terminal_at = now()
             WHERE id IN (SELECT id FROM operations WHERE status = 'running' ORDER BY id LIMIT 150)",
            2,
        ),
        (
            "UPDATE operations SET status = 'dead', claim_token = NULL, lease_until = NULL,
                 terminal_at = now(), terminal_reason = 'permanent', last_failure_class = 'permanent'
             WHERE id IN (SELECT id FROM operations WHERE status = 'running' ORDER BY id LIMIT 60)",
            0,
        ),
    ] {
        sqlx::query(statement)
            .execute(&mut *sessions[session])
            .await
            .expect(statement);
    }
    drop(sessions);

    // A slot on a boundary is its own slot (backlog_slot(), five minutes of UTC since 0035).
    let (slots, odd): (i64, i64) = sqlx::query_as(
        "SELECT count(*),
                count(*) FILTER (WHERE slot <> backlog_slot(slot) OR shard NOT BETWEEN 0 AND 15)
         FROM backlog_slots",
    )
    .fetch_one(pool)
    .await
    .expect("backlog slots");
    assert!(
        slots >= 15 * 3 - 3,
        "70 minutes from 3 shards: {slots} rows"
    );
    assert_eq!(odd, 0, "backlog slots off a boundary or out of the shards");
    let (slots, odd): (i64, i64) = sqlx::query_as(
        "SELECT count(*), count(*) FILTER (WHERE slot <> backlog_slot(slot) OR first_id > last_id)
         FROM creation_slots",
    )
    .fetch_one(pool)
    .await
    .expect("creation slots");
    assert!(slots >= 14, "70 minutes: {slots} slots");
    assert_eq!(
        odd, 0,
        "creation slots off a boundary or with a range out of order"
    );
    let shards: Vec<i16> = sqlx::query_scalar(
        "SELECT DISTINCT shard FROM operation_counts WHERE operations <> 0 ORDER BY 1",
    )
    .fetch_all(pool)
    .await
    .expect("shards");
    assert!(
        shards.len() >= 2 && shards.iter().all(|s| (0..16).contains(s)),
        "{shards:?}"
    );
    // The counts, summed over shards, are the operations by status and class, nothing else.
    let differ: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM (
             (SELECT status, failure_class, sum(operations) FROM operation_counts
              GROUP BY 1, 2 HAVING sum(operations) <> 0
              EXCEPT
              SELECT status, coalesce(last_failure_class, ''), count(*) FROM operations
              GROUP BY 1, 2)
             UNION ALL
             (SELECT status, coalesce(last_failure_class, ''), count(*) FROM operations
              GROUP BY 1, 2
              EXCEPT
              SELECT status, failure_class, sum(operations) FROM operation_counts
              GROUP BY 1, 2 HAVING sum(operations) <> 0)) AS d",
    )
    .fetch_one(pool)
    .await
    .expect("counts");
    assert_eq!(differ, 0, "the counts differ from the operations");
    let statuses: Vec<String> = sqlx::query_scalar(
        "SELECT DISTINCT status || '/' || failure_class FROM operation_counts
         WHERE operations <> 0 ORDER BY 1",
    )
    .fetch_all(pool)
    .await
    .expect("statuses");
    assert_eq!(
        statuses,
        [
            "dead/permanent",
            "pending/",
            "pending/rate_limited",
            "running/",
            "succeeded/"
        ],
    );

    let refused = sqlx::query("UPDATE operations SET status = 'finished' WHERE status = 'pending'")
        .execute(pool)
        .await
        .expect_err("a status outside the contract");
    assert!(
        refused.to_string().contains("operations_status_check"),
        "{refused}"
    );
}

/// Each attempt a completion records carries its operation's dependency ('' for none, as
/// attempt_minutes counts it), and the per-minute trigger counts an attempt under the dependency
/// its row records, looking the operation up only for one that records none (an earlier
/// release's): migration 0043.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attempts_are_counted_under_the_dependency_they_record() {
    use oprec_core::{Clock, EnqueueOptions, Failure, Transition};
    use oprec_testkit::operator_cases::finish;
    use oprec_testkit::store_cases::enqueue;

    let h = common::setup().await;
    let smtp = EnqueueOptions {
        dependency: Some("smtp".into()),
        ..Default::default()
    };
    let sent = enqueue(&h, "mail", smtp.clone()).await;
    finish(&h, sent, Transition::succeeded(None)).await;
    let failed = enqueue(&h, "mail", smtp).await;
    let at = h.clock.now();
    finish(&h, failed, Transition::retry(at, Failure::transient("503"))).await;
    let plain = enqueue(&h, "plain", EnqueueOptions::default()).await;
    finish(&h, plain, Transition::succeeded(None)).await;
    let pool = h.store.pool();
    let recorded: Vec<(String, Option<String>)> = sqlx::query_as(
        "SELECT o.kind, a.dependency FROM operation_attempts a
         JOIN operations o ON o.id = a.operation_id ORDER BY o.kind, a.id",
    )
    .fetch_all(pool)
    .await
    .expect("attempts");
    assert_eq!(
        recorded,
        [
            ("mail".to_owned(), Some("smtp".to_owned())),
            ("mail".to_owned(), Some("smtp".to_owned())),
            ("plain".to_owned(), Some(String::new())),
        ]
    );
    // Rows written by hand for the operation `plain` (which names no dependency): one recording
    // a dependency, counted under it though the operation names none (so the trigger read the
    // row, not the operation), and one recording none (NULL), counted by the operation's ('').
    for dependency in [Some("recorded"), None] {
        sqlx::query(
            "INSERT INTO operation_attempts (operation_id, attempt, claimed_at, ended_at, \
             outcome, dependency) VALUES ($1, 2, now(), now(), 'error', $2)",
        )
        .bind(*plain.as_uuid())
        .bind(dependency)
        .execute(pool)
        .await
        .expect("attempt written by hand");
    }
    let counted: Vec<(String, i64, i64)> = sqlx::query_as(
        "SELECT dependency, sum(attempts)::int8, sum(failed)::int8 FROM attempt_minutes
         GROUP BY 1 ORDER BY 1",
    )
    .fetch_all(pool)
    .await
    .expect("minutes");
    assert_eq!(
        counted,
        [
            (String::new(), 2, 1),
            ("recorded".to_owned(), 1, 1),
            ("smtp".to_owned(), 2, 1),
        ]
    );
}
