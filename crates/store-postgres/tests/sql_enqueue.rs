//! The SQL enqueue contract: `oprec_enqueue(kind, payload, options)` (migration 0021), called
//! directly, as any language calls it inside its own transaction. It writes the row the Rust
//! client writes for the same kind and options, refuses what the Rust client refuses with a
//! stable SQLSTATE and a message naming what is wrong, keeps idempotency keys unique per kind,
//! commits and rolls back with its caller's transaction, and leaves the wake-up to the
//! scheduler's re-selection (and poll-only claims).

mod common;

use chrono::{DateTime, Duration, Utc};
use oprec_core::maintenance::WakeDueParams;
use oprec_core::prelude::*;
use oprec_core::store::{ClaimEligibleParams, Claimant, OperationGetParams};
use oprec_core::{
    DEFAULT_MAX_PAYLOAD_BYTES, EnqueueOptions, Exponential, Jitter, KindPolicy, KindPublishParams,
    Ladder, NewOperation, Operation, OperationId, PayloadMode, RetryPolicy, Status,
};
use oprec_postgres::PgStore;
use serde_json::{Value, json};
use sqlx::postgres::PgDatabaseError;
use uuid::Uuid;

/// `shipment.create`: six attempts on a ladder whose first rung waits 15 s, 48 h to give up, a
/// snapshot payload, the dependency `shipping`.
fn shipment_policy() -> RetryPolicy {
    RetryPolicy::builder()
        .timeout(Duration::seconds(30))
        .max_attempts(6)
        .give_up_after(Duration::hours(48))
        .external_io(Ladder::schedule_secs(&[15, 60, 300, 1500, 7500, 37500]))
        .jitter(Jitter::Equal)
        .build()
        .expect("policy")
}

/// `report.render`: no attempt bound, 90 minutes to give up, an exponential ladder (no first
/// rung), a reference payload, no dependency.
fn report_policy() -> RetryPolicy {
    RetryPolicy::builder()
        .timeout(Duration::seconds(30))
        .give_up_after(Duration::minutes(90))
        .external_io(Ladder::exponential(Exponential::new(
            Duration::seconds(5),
            2.0,
            Duration::hours(1),
        )))
        .jitter(Jitter::Full)
        .build()
        .expect("policy")
}

/// A store over a fresh schema whose worker published `shipment.create` and `report.render`.
async fn published_store() -> PgStore {
    let store = common::fresh_store(4).await;
    store
        .kind_publish(KindPublishParams {
            published_by: "worker-1".into(),
            code_version: Some("v1".into()),
            kinds: vec![
                KindPolicy::new(
                    "shipment.create",
                    &shipment_policy(),
                    PayloadMode::Snapshot,
                    Some("shipping"),
                ),
                KindPolicy::new(
                    "report.render",
                    &report_policy(),
                    PayloadMode::Reference,
                    None,
                ),
            ],
        })
        .await
        .expect("publish");
    store
}

/// `SELECT oprec_enqueue($1, $2, $3)` on its own connection (its own transaction).
async fn enqueue(
    store: &PgStore,
    kind: &str,
    payload: Value,
    options: Value,
) -> Result<Uuid, sqlx::Error> {
    sqlx::query_scalar("SELECT oprec_enqueue($1, $2, $3)")
        .bind(kind)
        .bind(payload)
        .bind(options)
        .fetch_one(store.pool())
        .await
}

/// The SQLSTATE, message, detail and hint of a database error.
fn refusal(e: sqlx::Error) -> (String, String, Option<String>, Option<String>) {
    let db = e
        .as_database_error()
        .unwrap_or_else(|| panic!("not a database error: {e}"));
    let pg = db
        .try_downcast_ref::<PgDatabaseError>()
        .expect("a PostgreSQL error");
    (
        pg.code().to_owned(),
        pg.message().to_owned(),
        pg.detail().map(str::to_owned),
        pg.hint().map(str::to_owned),
    )
}

/// The operation `id`, read back through the store.
async fn operation(store: &PgStore, id: Uuid) -> Operation {
    store
        .operation_get(OperationGetParams {
            id: OperationId::from_uuid(id),
        })
        .await
        .expect("read")
        .expect("the operation exists")
        .operation
}

async fn count(store: &PgStore, sql: &str) -> i64 {
    sqlx::query_scalar(sqlx::AssertSqlSafe(sql.to_owned()))
        .fetch_one(store.pool())
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
}

/// For each kind and each set of options, the SQL function writes what the Rust client's
/// `NewOperation` would have written at the same instant: the attempt bound (the policy's, or the
/// caller's when lower), the first eligible time (delay plus the ladder's first rung), the
/// deadline (the caller's, or the kind's give-up duration), the payload mode, the dependency
/// (the caller's or the kind's), the enqueue options as kept in `enqueue_params`, and a UUID v7
/// of the enqueue time; pending, never woken, attempt 0.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_row_is_the_one_the_rust_client_writes() {
    let store = published_store().await;
    let deadline: DateTime<Utc> = "2099-03-04T05:06:07.5Z".parse().unwrap();
    let cases: Vec<(&str, RetryPolicy, Value, EnqueueOptions)> = vec![
        (
            "shipment.create",
            shipment_policy(),
            json!({}),
            EnqueueOptions::default(),
        ),
        (
            "shipment.create",
            shipment_policy(),
            json!({"idempotency_key": "order-42", "delay": 90, "max_attempts": 2,
                   "dependency": "backup-carrier"}),
            EnqueueOptions {
                idempotency_key: Some("order-42".into()),
                delay: Some(Duration::seconds(90)),
                max_attempts: Some(2),
                dependency: Some("backup-carrier".into()),
                ..EnqueueOptions::default()
            },
        ),
        (
            "shipment.create",
            shipment_policy(),
            // A caller's bound above the policy's is no bound: the policy is the ceiling.
            json!({"delay": "1h30m", "deadline": "2099-03-04T07:06:07.5+02:00",
                   "max_attempts": 50}),
            EnqueueOptions {
                delay: Some(Duration::minutes(90)),
                deadline: Some(deadline),
                max_attempts: Some(50),
                ..EnqueueOptions::default()
            },
        ),
        (
            "report.render",
            report_policy(),
            json!({"delay": 1.25, "idempotency_key": null, "dependency": null}),
            EnqueueOptions {
                delay: Some(Duration::milliseconds(1250)),
                ..EnqueueOptions::default()
            },
        ),
        (
            "report.render",
            report_policy(),
            json!({"max_attempts": 3, "max_payload_bytes": 100}),
            EnqueueOptions {
                max_attempts: Some(3),
                ..EnqueueOptions::default()
            },
        ),
    ];
    let mut last: Option<Uuid> = None;
    for (kind, policy, options, rust_options) in cases {
        let payload =
            json!({"order": 42, "lines": [{"sku": "A-1", "qty": 2}], "note": "ça, va: ok"});
        let id = enqueue(&store, kind, payload.clone(), options.clone())
            .await
            .unwrap_or_else(|e| panic!("{kind} {options}: {e}"));
        let stored = operation(&store, id).await;

        // What the Rust client would write at the same instant.
        let mut rust_options = rust_options;
        let dependency = store_dependency(kind);
        if rust_options.dependency.is_none() {
            rust_options.dependency = dependency.map(str::to_owned);
        }
        let want = NewOperation::new(
            kind,
            payload.clone(),
            &policy,
            rust_options.clone(),
            stored.created_at,
        )
        .expect("the Rust client accepts it too");
        let case = format!("{kind} {options}");
        assert_eq!(stored.kind, kind, "{case}");
        assert_eq!(stored.payload, payload, "{case}");
        assert_eq!(stored.idempotency_key, want.idempotency_key, "{case}");
        assert_eq!(stored.max_attempts, want.max_attempts, "{case}");
        assert_eq!(stored.next_eligible_at, want.next_eligible_at, "{case}");
        assert_eq!(stored.give_up_at, want.give_up_at, "{case}");
        assert_eq!(stored.dependency, want.dependency, "{case}");
        let mode = if kind == "report.render" {
            PayloadMode::Reference
        } else {
            PayloadMode::Snapshot
        };
        assert_eq!(stored.payload_mode, Some(mode), "{case}");
        let params: EnqueueOptions =
            serde_json::from_value(stored.enqueue_params.clone()).expect("enqueue_params reads");
        assert_eq!(params, rust_options, "{case}: {}", stored.enqueue_params);
        assert_eq!(
            (stored.status, stored.attempt, stored.last_woken_at),
            (Status::Pending, 0, None),
            "{case}"
        );
        assert_eq!(stored.updated_at, stored.created_at, "{case}");
        // A UUID v7 of the enqueue time, later than the previous one.
        assert_eq!(id.get_version_num(), 7, "{case}");
        let (secs, nanos) = id.get_timestamp().expect("v7 timestamp").to_unix();
        assert_eq!(
            i64::try_from(secs).unwrap() * 1000 + i64::from(nanos / 1_000_000),
            stored.created_at.timestamp_millis(),
            "{case}"
        );
        assert!(last < Some(id), "ids sort by enqueue time");
        last = Some(id);
    }
}

/// The dependency each published kind declared.
fn store_dependency(kind: &str) -> Option<&'static str> {
    (kind == "shipment.create").then_some("shipping")
}

/// A call that is refused: kind, payload, options, the SQLSTATE and words of the message.
type Refused<'a> = (Option<&'a str>, Option<Value>, Value, &'a str, String);

/// Every refusal names what is wrong and carries a SQLSTATE of class OQ a caller can branch on;
/// nothing is inserted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_is_refused_with_a_stable_sqlstate_naming_what_is_wrong() {
    // Before any worker published anything.
    let empty = common::fresh_store(1).await;
    let (code, message, detail, hint) = refusal(
        enqueue(&empty, "shipment.create", json!({}), json!({}))
            .await
            .unwrap_err(),
    );
    assert_eq!(code, "OQ001");
    assert!(
        message.contains("unknown kind \"shipment.create\"; known kinds: (none)"),
        "{message}"
    );
    assert!(
        detail
            .unwrap()
            .contains("No worker has published its kinds"),
        "detail"
    );
    assert!(hint.unwrap().contains("Start a worker"), "hint");

    let store = published_store().await;
    let big = json!({"text": "x".repeat(300_000)});
    let big_size = serde_json::to_vec(&big).unwrap().len();
    let cases: Vec<Refused> =
        vec![
        (
            Some("shipment.craete"),
            Some(json!({})),
            json!({}),
            "OQ001",
            "unknown kind \"shipment.craete\"; known kinds: report.render, shipment.create".into(),
        ),
        (None, Some(json!({})), json!({}), "OQ001", "the kind must not be NULL".into()),
        (
            Some("shipment.create"),
            Some(big),
            json!({}),
            "OQ002",
            format!(
                "payload is {big_size} bytes, over the limit of {DEFAULT_MAX_PAYLOAD_BYTES} bytes; \
                 store large inputs elsewhere and enqueue a reference"
            ),
        ),
        (
            Some("shipment.create"),
            Some(json!({"note": "twenty-five characters!"})),
            json!({"max_payload_bytes": 20}),
            "OQ002",
            "payload is 34 bytes, over the limit of 20 bytes".into(),
        ),
        (
            Some("shipment.create"),
            None,
            json!({}),
            "OQ003",
            "the payload must not be NULL".into(),
        ),
        (
            Some("shipment.create"),
            Some(json!("__WIDE__")),
            json!({}),
            "OQ003",
            "the payload holds the integer 123456789012345678901234, wider than 64 bits".into(),
        ),
        (
            Some("shipment.create"),
            Some(json!({})),
            json!({"idempotency_kye": "k", "retries": 3}),
            "OQ004",
            "unknown options: \"idempotency_kye\", \"retries\"; known options: deadline, delay, \
             dependency, idempotency_key, max_attempts, max_payload_bytes, priority, traceparent"
                .into(),
        ),
        (
            Some("shipment.create"),
            Some(json!({})),
            json!({"priority": 3}),
            "OQ005",
            "option priority must be a whole number from -2 (claimed last) to 2 (claimed first), \
             not 3"
                .into(),
        ),
        (
            Some("shipment.create"),
            Some(json!({})),
            json!({"priority": "high"}),
            "OQ005",
            "option priority must be a whole number from -2".into(),
        ),
        (
            Some("shipment.create"),
            Some(json!({})),
            json!({"priority": 1.5}),
            "OQ005",
            "option priority must be a whole number from -2".into(),
        ),
        (
            Some("shipment.create"),
            Some(json!({})),
            json!({"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7"}),
            "OQ005",
            "option traceparent \"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7\" is \
             not a W3C trace context; expected 00-<32 hex digits>-<16 hex digits>-<2 hex digits>"
                .into(),
        ),
        (
            Some("shipment.create"),
            Some(json!({})),
            json!({"traceparent": "00-00000000000000000000000000000000-00f067aa0ba902b7-01"}),
            "OQ005",
            "is not a W3C trace context".into(),
        ),
        (
            Some("shipment.create"),
            Some(json!({})),
            json!({"traceparent": 7}),
            "OQ005",
            "option traceparent 7 is not a W3C trace context".into(),
        ),
        (
            Some("shipment.create"),
            Some(json!({})),
            json!(["delay", 5]),
            "OQ005",
            "options must be a JSON object, not array".into(),
        ),
        (
            Some("shipment.create"),
            Some(json!({})),
            json!({"idempotency_key": 42}),
            "OQ005",
            "option idempotency_key must be a string, not number".into(),
        ),
        (
            Some("shipment.create"),
            Some(json!({})),
            json!({"idempotency_key": ""}),
            "OQ005",
            "option idempotency_key must be 1 to 1000 bytes, not 0".into(),
        ),
        (
            Some("shipment.create"),
            Some(json!({})),
            json!({"idempotency_key": "é".repeat(501)}),
            "OQ005",
            "option idempotency_key must be 1 to 1000 bytes, not 1002".into(),
        ),
        (
            Some("shipment.create"),
            Some(json!({})),
            json!({"delay": -1}),
            "OQ005",
            "option delay must not be negative, not -1".into(),
        ),
        (
            Some("shipment.create"),
            Some(json!({})),
            json!({"delay": "soon"}),
            "OQ005",
            "option delay \"soon\" is neither an interval".into(),
        ),
        (
            Some("shipment.create"),
            Some(json!({})),
            json!({"delay": true}),
            "OQ005",
            "option delay must be a number of seconds or an interval (a string), not boolean"
                .into(),
        ),
        (
            Some("shipment.create"),
            Some(json!({})),
            json!({"delay": 1e15}),
            "OQ005",
            "the delay or deadline is too far in the future".into(),
        ),
        (
            Some("shipment.create"),
            Some(json!({})),
            json!({"deadline": "2020-01-01T00:00:00Z"}),
            "OQ005",
            "deadline 2020-01-01 00:00:00+00 is not in the future".into(),
        ),
        (
            Some("shipment.create"),
            Some(json!({})),
            json!({"deadline": -5}),
            "OQ005",
            "is not in the future".into(),
        ),
        (
            Some("shipment.create"),
            Some(json!({})),
            json!({"deadline": "next tuesday"}),
            "OQ005",
            "option deadline \"next tuesday\" is neither a time with its offset".into(),
        ),
        (
            Some("shipment.create"),
            Some(json!({})),
            json!({"deadline": 1e300}),
            "OQ005",
            "the delay or deadline is too far in the future".into(),
        ),
        (
            Some("shipment.create"),
            Some(json!({})),
            json!({"max_attempts": 0}),
            "OQ005",
            "option max_attempts must be a positive whole number (1 to 4294967295), not 0".into(),
        ),
        (
            Some("shipment.create"),
            Some(json!({})),
            json!({"max_attempts": 2.5}),
            "OQ005",
            "option max_attempts must be a positive whole number".into(),
        ),
        (
            Some("shipment.create"),
            Some(json!({})),
            json!({"dependency": ["a"]}),
            "OQ005",
            "option dependency must be a string, not array".into(),
        ),
        (
            Some("shipment.create"),
            Some(json!({})),
            json!({"max_payload_bytes": "1MB"}),
            "OQ005",
            "option max_payload_bytes must be a positive whole number, not \"1MB\"".into(),
        ),
    ];
    for (kind, payload, options, want_code, needle) in cases {
        let case = format!("{kind:?} {options}");
        // JSON text, so that an integer serde_json cannot hold reaches PostgreSQL as written.
        let payload = payload.map(|p| match p.as_str() {
            Some("__WIDE__") => r#"{"order": {"id": 123456789012345678901234}}"#.to_owned(),
            _ => p.to_string(),
        });
        let e = sqlx::query_scalar::<_, Uuid>("SELECT oprec_enqueue($1, $2::text::jsonb, $3)")
            .bind(kind)
            .bind(payload)
            .bind(options)
            .fetch_one(store.pool())
            .await
            .expect_err(&case);
        let (code, message, _, _) = refusal(e);
        assert_eq!(code, want_code, "{case}: {message}");
        assert!(
            message.starts_with("oprec_enqueue: ") && message.contains(&needle),
            "{case}: {message} lacks {needle}"
        );
    }
    assert_eq!(count(&store, "SELECT count(*) FROM operations").await, 0);
}

/// The payload limit counts the compact JSON text, as the Rust client's (serde_json) does,
/// though PostgreSQL writes jsonb with spaces: a payload exactly at the limit is taken, one byte
/// over is refused, whatever its shape.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_payload_limit_counts_compact_json_as_the_rust_client_does() {
    let store = published_store().await;
    let shapes = [
        json!(null),
        json!("a, b: c"),
        json!({}),
        json!([]),
        json!({"a": [1, 2, {"b": "x, y: \"z\" \\ q"}], "c": {}, "d": [], "e": true, "f": -1.5}),
        json!({"ünï": "çødé ✓", "tab\t": "line\nbreak", "ctl": "\u{1f}"}),
        json!([[[[]]], {"k": {"k": {"k": null}}}]),
    ];
    for v in &shapes {
        let size: i64 = sqlx::query_scalar("SELECT oprec_payload_bytes($1)")
            .bind(v)
            .fetch_one(store.pool())
            .await
            .expect("size");
        assert_eq!(size as usize, serde_json::to_vec(v).unwrap().len(), "{v}");
    }
    // Many small keys: the jsonb text is a quarter longer than the compact JSON.
    let mut payload = serde_json::Map::new();
    for i in 0..20_000 {
        payload.insert(format!("k{i:05}"), json!(i % 10));
    }
    let payload = Value::Object(payload);
    let limit = serde_json::to_vec(&payload).unwrap().len();
    let at = |bytes: usize| json!({ "max_payload_bytes": bytes });
    enqueue(&store, "shipment.create", payload.clone(), at(limit))
        .await
        .expect("a payload exactly at the limit is taken");
    let (code, message, _, _) = refusal(
        enqueue(&store, "shipment.create", payload, at(limit - 1))
            .await
            .unwrap_err(),
    );
    assert_eq!(code, "OQ002");
    assert!(
        message.contains(&format!(
            "payload is {limit} bytes, over the limit of {} bytes",
            limit - 1
        )),
        "{message}"
    );
    // Integers at the ends of the 64-bit ranges are kept exact; beyond them they are refused.
    enqueue(
        &store,
        "shipment.create",
        json!({"max": u64::MAX, "min": i64::MIN}),
        json!({}),
    )
    .await
    .expect("64-bit integers are taken");
}

/// An idempotency key is unique per kind: enqueueing it again (in another transaction or the
/// same one) returns the operation that holds it, another kind may use the same key, a key
/// rolled back frees it, and a key another open transaction has just written waits for that
/// transaction.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idempotency_key_returns_the_operation_that_holds_it() {
    let store = published_store().await;
    let key = json!({"idempotency_key": "order-7"});
    let first = enqueue(&store, "shipment.create", json!({"order": 7}), key.clone())
        .await
        .unwrap();
    let again = enqueue(&store, "shipment.create", json!({"order": 7}), key.clone())
        .await
        .unwrap();
    assert_eq!(again, first);
    let other_kind = enqueue(&store, "report.render", json!({}), key.clone())
        .await
        .unwrap();
    assert_ne!(other_kind, first);

    // Within one transaction: the second call finds the first's row.
    let mut tx = store.pool().begin().await.unwrap();
    let key8 = json!({"idempotency_key": "order-8"});
    let a: Uuid = sqlx::query_scalar("SELECT oprec_enqueue('shipment.create', '{}', $1)")
        .bind(&key8)
        .fetch_one(&mut *tx)
        .await
        .unwrap();
    let b: Uuid = sqlx::query_scalar("SELECT oprec_enqueue('shipment.create', '{}', $1)")
        .bind(&key8)
        .fetch_one(&mut *tx)
        .await
        .unwrap();
    assert_eq!(a, b);
    // Rolled back: the key is free again, and a new operation takes it.
    tx.rollback().await.unwrap();
    let c = enqueue(&store, "shipment.create", json!({}), key8.clone())
        .await
        .unwrap();
    assert_ne!(c, a);

    // A key another open transaction holds: the call waits for it, then returns its operation.
    let mut holder = store.pool().begin().await.unwrap();
    let key9 = json!({"idempotency_key": "order-9"});
    let held: Uuid = sqlx::query_scalar("SELECT oprec_enqueue('shipment.create', '{}', $1)")
        .bind(&key9)
        .fetch_one(&mut *holder)
        .await
        .unwrap();
    let waiter = tokio::spawn({
        let store = store.clone();
        let key9 = key9.clone();
        async move { enqueue(&store, "shipment.create", json!({}), key9).await }
    });
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert!(
        !waiter.is_finished(),
        "the second call waits for the first's transaction"
    );
    holder.commit().await.unwrap();
    assert_eq!(waiter.await.unwrap().unwrap(), held);
    assert_eq!(
        count(
            &store,
            "SELECT count(*) FROM operations WHERE idempotency_key LIKE 'order-%'"
        )
        .await,
        4,
        "order-7 twice (two kinds), order-8 once, order-9 once"
    );
}

/// The operation and the caller's own row commit together or not at all, and a committed one is
/// woken by the scheduler's next pass (it was never woken) and claimable by a poll-only worker:
/// no broker is called from SQL.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_operation_commits_with_the_callers_row_and_the_scheduler_wakes_it() {
    let store = published_store().await;
    sqlx::query("CREATE TABLE orders (id bigint PRIMARY KEY)")
        .execute(store.pool())
        .await
        .unwrap();
    let place = |order: i64, commit: bool| {
        let store = store.clone();
        async move {
            let mut tx = store.pool().begin().await.unwrap();
            sqlx::query("INSERT INTO orders (id) VALUES ($1)")
                .bind(order)
                .execute(&mut *tx)
                .await
                .unwrap();
            let id: Uuid = sqlx::query_scalar(
                "SELECT oprec_enqueue('shipment.create', jsonb_build_object('order', $1::int8), \
                 jsonb_build_object('idempotency_key', 'order-' || $1))",
            )
            .bind(order)
            .fetch_one(&mut *tx)
            .await
            .unwrap();
            if commit {
                tx.commit().await.unwrap();
            } else {
                tx.rollback().await.unwrap();
            }
            id
        }
    };
    let kept = place(1, true).await;
    place(2, false).await;
    assert_eq!(count(&store, "SELECT count(*) FROM orders").await, 1);
    assert_eq!(count(&store, "SELECT count(*) FROM operations").await, 1);
    assert_eq!(
        count(
            &store,
            "SELECT count(*) FROM operations WHERE idempotency_key = 'order-2'"
        )
        .await,
        0
    );

    // The first rung waits 15 s: not due yet. Once due (moved for the test), the scheduler's
    // pick wakes it, once.
    let due = || async {
        store
            .operation_wake_due(WakeDueParams::all(Duration::seconds(30), 100))
            .await
            .unwrap()
    };
    assert!(due().await.is_empty(), "not eligible before its first rung");
    sqlx::query("UPDATE operations SET next_eligible_at = now() - interval '1 second'")
        .execute(store.pool())
        .await
        .unwrap();
    let woken = due().await;
    assert_eq!(
        woken
            .iter()
            .map(|w| (*w.id.as_uuid(), w.kind.as_str()))
            .collect::<Vec<_>>(),
        vec![(kept, "shipment.create")]
    );
    assert!(due().await.is_empty(), "woken once");

    // Poll-only: a worker claims it straight from the store.
    let claimed = store
        .operation_claim_eligible(ClaimEligibleParams {
            above_default_only: false,
            kinds: vec!["shipment.create".into()],
            limit: 10,
            claimant: Claimant {
                worker_id: "poller".into(),
                code_version: None,
                lease: Duration::seconds(30),
            },
        })
        .await
        .unwrap();
    assert_eq!(claimed.len(), 1);
    assert_eq!(*claimed[0].id.as_uuid(), kept);
}

/// The functions find their tables in their own schema: a producer whose session's search path
/// lacks it calls them by their qualified names. `oprec_enqueue` runs with its owner's rights,
/// executable by no other role until granted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_without_the_schema_on_its_path_enqueues_by_the_qualified_name() {
    let store = published_store().await;
    let schema: String = sqlx::query_scalar("SELECT current_schema()::text")
        .fetch_one(store.pool())
        .await
        .unwrap();
    let producer = sqlx::PgPool::connect(&common::database_url())
        .await
        .expect("connect with the default search path");
    let id: Uuid = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
        "SELECT {schema}.oprec_enqueue('shipment.create', '{{\"order\": 3}}')"
    )))
    .fetch_one(&producer)
    .await
    .expect("enqueue by the qualified name");
    producer.close().await;
    assert_eq!(operation(&store, id).await.payload, json!({"order": 3}));

    // It writes with its owner's rights, so no role but the owner may run it until granted.
    let (definer, public): (bool, bool) = sqlx::query_as(
        "SELECT p.prosecdef, has_function_privilege('public', p.oid, 'EXECUTE') FROM pg_proc p          WHERE p.oid = 'oprec_enqueue(text, jsonb, jsonb)'::regprocedure",
    )
    .fetch_one(store.pool())
    .await
    .unwrap();
    assert!(definer, "SECURITY DEFINER");
    assert!(!public, "EXECUTE revoked from PUBLIC");
}

/// `oprec_uuidv7(at)`: version 7, the RFC 9562 variant, the time's milliseconds in the first 48
/// bits, and ids of later times sort later, to the microsecond.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uuid_v7_carries_its_time_and_sorts_by_it() {
    let store = common::fresh_store(1).await;
    let ids: Vec<(Uuid, DateTime<Utc>)> = sqlx::query_as(
        "SELECT oprec_uuidv7(t), t FROM generate_series(
             timestamptz '2026-01-05 09:00:00.000001+00',
             timestamptz '2026-01-05 09:00:00.003+00',
             interval '7 microseconds') AS t",
    )
    .fetch_all(store.pool())
    .await
    .unwrap();
    assert!(ids.len() > 400);
    for (id, t) in &ids {
        assert_eq!(id.get_version_num(), 7);
        assert_eq!(id.get_variant(), uuid::Variant::RFC4122);
        let (secs, nanos) = id.get_timestamp().unwrap().to_unix();
        assert_eq!(
            i64::try_from(secs).unwrap() * 1000 + i64::from(nanos / 1_000_000),
            t.timestamp_millis()
        );
    }
    assert!(ids.windows(2).all(|w| w[0].0 < w[1].0), "sorted by time");
    let e = sqlx::query_scalar::<_, Uuid>("SELECT oprec_uuidv7('1960-01-01')")
        .fetch_one(store.pool())
        .await
        .unwrap_err();
    assert!(
        e.to_string().contains("outside the range of a UUID v7"),
        "{e}"
    );
}

/// The option traceparent (migration 0023) is stored in the column the Rust client writes, kept
/// in enqueue_params, and read back as the operation's trace context.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_traceparent_option_is_stored_as_the_rust_client_stores_it() {
    let store = published_store().await;
    let tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    let id = enqueue(
        &store,
        "shipment.create",
        json!({}),
        json!({"traceparent": tp}),
    )
    .await
    .expect("enqueue");
    let op = operation(&store, id).await;
    assert_eq!(op.traceparent.as_ref().map(|t| t.as_str()), Some(tp));
    assert_eq!(op.enqueue_params["traceparent"], tp);
    let none = enqueue(
        &store,
        "shipment.create",
        json!({}),
        json!({"traceparent": null}),
    )
    .await
    .expect("enqueue");
    assert_eq!(operation(&store, none).await.traceparent, None);
    // The column's check refuses what no enqueue path writes.
    let e = sqlx::query("UPDATE operations SET traceparent = 'garbage' WHERE id = $1")
        .bind(id)
        .execute(store.pool())
        .await
        .unwrap_err();
    assert!(e.to_string().contains("operations_traceparent_w3c"), "{e}");
}

/// The option priority (migration 0026) is stored in the column the Rust client writes and kept
/// in enqueue_params; without it the operation has the default priority 0.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_priority_option_is_stored_as_the_rust_client_stores_it() {
    let store = published_store().await;
    let priority_of = |id: Uuid| {
        let store = &store;
        async move {
            sqlx::query_scalar::<_, i16>("SELECT priority FROM operations WHERE id = $1")
                .bind(id)
                .fetch_one(store.pool())
                .await
                .unwrap()
        }
    };
    let high = enqueue(&store, "shipment.create", json!({}), json!({"priority": 2}))
        .await
        .expect("enqueue");
    assert_eq!(priority_of(high).await, 2);
    assert_eq!(operation(&store, high).await.enqueue_params["priority"], 2);
    let low = enqueue(
        &store,
        "shipment.create",
        json!({}),
        json!({"priority": -2}),
    )
    .await
    .expect("enqueue");
    assert_eq!(priority_of(low).await, -2);
    let plain = enqueue(&store, "shipment.create", json!({}), json!({}))
        .await
        .expect("enqueue");
    assert_eq!(priority_of(plain).await, 0);
    assert!(
        operation(&store, plain)
            .await
            .enqueue_params
            .get("priority")
            .is_none()
    );
    // The column's check refuses what no enqueue path writes.
    let e = sqlx::query("UPDATE operations SET priority = 9 WHERE id = $1")
        .bind(high)
        .execute(store.pool())
        .await
        .unwrap_err();
    assert!(e.to_string().contains("operations_priority_range"), "{e}");
}
