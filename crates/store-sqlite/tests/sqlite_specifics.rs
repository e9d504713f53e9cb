//! What the conformance suite cannot see but SQLite makes worth checking: batches larger than one
//! enqueue statement carries and lists longer than SQLite's bind parameters, the same operation
//! twice in one batch of completions, a busy database reported as transient, the stored text
//! operators query, and in-memory databases.

use std::sync::Arc;

use chrono::Duration;
use oprec_core::operator::CancelParams;
use oprec_core::store::{
    ClaimByIdsParams, ClaimEligibleParams, Claimant, CompleteParams, CompleteResult,
    MarkWokenParams, OperationGetParams,
};
use oprec_core::{
    Clock, EnqueueOptions, EnqueueStore, ManualClock, NewOperation, OperationId, OperatorStore,
    Status, Store, Transition, WorkerStore,
};
use oprec_sqlite::SqliteStore;
use oprec_testkit::start_time;
use oprec_testkit::store_cases::plain_policy;
use serde_json::json;
use sqlx::sqlite::SqliteConnectOptions;

fn claimant() -> Claimant {
    Claimant {
        worker_id: "w".into(),
        code_version: None,
        lease: Duration::seconds(30),
    }
}

/// A migrated store on a new file (kept for the test's life), on a manual clock.
async fn fresh() -> (SqliteStore, Arc<ManualClock>, tempfile::TempDir) {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("temp dir");
    let url = format!("sqlite://{}", dir.path().join("oprec.db").display());
    let clock = Arc::new(ManualClock::new(start_time()));
    let store = SqliteStore::connect(&url)
        .await
        .expect("open")
        .with_clock(clock.clone());
    store.migrate().await.expect("migrate");
    (store, clock, dir)
}

fn new_op(clock: &ManualClock, key: Option<String>) -> NewOperation {
    let options = EnqueueOptions {
        idempotency_key: key,
        ..Default::default()
    };
    NewOperation::new(
        "bulk",
        json!({"n": 1}),
        &plain_policy(),
        options,
        clock.now(),
    )
    .unwrap()
}

#[tokio::test]
async fn batches_larger_than_one_statement_are_whole() {
    let (store, clock, _dir) = fresh().await;
    const N: usize = 1_234;
    // Every tenth operation repeats the key of the one before it.
    let key = |i: usize| Some(format!("key-{}", i - usize::from(i % 10 == 9)));
    let ops: Vec<NewOperation> = (0..N).map(|i| new_op(&clock, key(i))).collect();
    let enqueued = store.operation_insert_many(ops).await.unwrap();
    assert_eq!(enqueued.len(), N);
    let created = enqueued.iter().filter(|e| e.created).count();
    assert_eq!(created, N - N / 10);
    for i in (9..N).step_by(10) {
        assert_eq!(enqueued[i].id, enqueued[i - 1].id);
    }
    // Again, in one batch: every key is found, nothing is created.
    let again: Vec<NewOperation> = (0..N).map(|i| new_op(&clock, key(i))).collect();
    let again = store.operation_insert_many(again).await.unwrap();
    assert!(again.iter().all(|e| !e.created));
    assert!(again.iter().zip(&enqueued).all(|(a, e)| a.id == e.id));

    let claimed = store
        .operation_claim_eligible(ClaimEligibleParams {
            above_default_only: false,
            kinds: vec![],
            limit: 5_000,
            claimant: claimant(),
        })
        .await
        .unwrap();
    assert_eq!(claimed.len(), created);
    let completions: Vec<CompleteParams> = claimed
        .iter()
        .map(|c| CompleteParams {
            id: c.id,
            claim_token: c.claim_token(),
            transition: Transition::succeeded(None),
        })
        .collect();
    let results = store.operation_complete_many(completions).await.unwrap();
    assert!(results.iter().all(|r| *r == CompleteResult::Applied));
    let detail = store
        .operation_get(OperationGetParams {
            id: claimed[700].id,
        })
        .await
        .unwrap()
        .unwrap();
    assert_eq!(detail.operation.status, Status::Succeeded);
    assert_eq!(detail.attempts.len(), 1);

    let more: Vec<NewOperation> = (0..N).map(|_| new_op(&clock, None)).collect();
    let ids: Vec<OperationId> = store
        .operation_insert_many(more)
        .await
        .unwrap()
        .iter()
        .map(|e| e.id)
        .collect();
    clock.advance(Duration::seconds(1));
    store
        .operation_mark_woken(MarkWokenParams { ids: ids.clone() })
        .await
        .unwrap();
    let last = store
        .operation_get(OperationGetParams { id: ids[N - 1] })
        .await
        .unwrap()
        .unwrap();
    assert_eq!(last.operation.last_woken_at, Some(clock.now()));
    let cancelled = store
        .operation_cancel(CancelParams { ids: ids.clone() })
        .await
        .unwrap();
    assert_eq!(cancelled, ids, "all cancelled, in the order asked for");
}

#[tokio::test]
async fn the_same_operation_twice_in_one_batch_applies_in_order() {
    let (store, clock, _dir) = fresh().await;
    let a = store
        .operation_insert(new_op(&clock, None))
        .await
        .unwrap()
        .id;
    let b = store
        .operation_insert(new_op(&clock, None))
        .await
        .unwrap()
        .id;
    let claimed = store
        .operation_claim_by_ids(ClaimByIdsParams {
            kinds: vec![],
            ids: vec![a, b],
            claimant: claimant(),
        })
        .await
        .unwrap();
    let token = |id| claimed.iter().find(|c| c.id == id).unwrap().claim_token();
    let end = |id, claim_token| CompleteParams {
        id,
        claim_token,
        transition: Transition::succeeded(None),
    };
    let results = store
        .operation_complete_many(vec![
            end(a, uuid::Uuid::now_v7()),
            end(b, token(b)),
            end(a, token(a)),
            end(b, token(b)),
        ])
        .await
        .unwrap();
    use CompleteResult::{Applied, Stale};
    assert_eq!(results, vec![Stale, Applied, Applied, Stale]);
    for id in [a, b] {
        let d = store
            .operation_get(OperationGetParams { id })
            .await
            .unwrap()
            .unwrap();
        assert_eq!(d.operation.status, Status::Succeeded);
        assert_eq!(
            d.attempts.len(),
            1,
            "one history row per applied completion"
        );
    }
}

#[tokio::test]
async fn a_database_busy_past_the_timeout_is_a_transient_error() {
    let (store, clock, dir) = fresh().await;
    let id = store
        .operation_insert(new_op(&clock, None))
        .await
        .unwrap()
        .id;
    // Another process holds the write lock...
    let mut holder = store.pool().begin_with("BEGIN IMMEDIATE").await.unwrap();
    sqlx::query("UPDATE operations SET remote_id = 'x'")
        .execute(&mut *holder)
        .await
        .unwrap();
    // ...and this one will not wait for it.
    let impatient = SqliteStore::connect_with(
        SqliteConnectOptions::new()
            .filename(dir.path().join("oprec.db"))
            .busy_timeout(std::time::Duration::ZERO),
        1,
    )
    .await
    .unwrap();
    let err = impatient
        .operation_mark_woken(MarkWokenParams { ids: vec![id] })
        .await
        .expect_err("the write lock is held");
    assert!(err.is_transient(), "{err}");
    holder.rollback().await.unwrap();
    impatient
        .operation_mark_woken(MarkWokenParams { ids: vec![id] })
        .await
        .unwrap();
}

#[tokio::test]
async fn stored_text_is_fixed_width_and_guarded() {
    let (store, clock, _dir) = fresh().await;
    clock.advance(Duration::microseconds(1_500));
    let id = store
        .operation_insert(new_op(&clock, None))
        .await
        .unwrap()
        .id;
    let (stored_id, created_at, payload): (String, String, String) =
        sqlx::query_as("SELECT id, created_at, payload FROM operations")
            .fetch_one(store.pool())
            .await
            .unwrap();
    assert_eq!(stored_id, id.to_string());
    assert_eq!(created_at, "2026-01-05T09:00:00.001500Z");
    assert_eq!(payload, r#"{"n":1}"#);
    // SQLite's own time functions write another format, which would compare wrongly.
    let hand_written = sqlx::query("UPDATE operations SET next_eligible_at = datetime('now')")
        .execute(store.pool())
        .await;
    assert!(
        hand_written.is_err(),
        "the schema refuses other time formats"
    );
    let bad_json = sqlx::query("UPDATE operations SET last_error = 'not json'")
        .execute(store.pool())
        .await;
    assert!(
        bad_json.is_err(),
        "the schema refuses text that is not JSON"
    );
}

#[tokio::test]
async fn an_in_memory_database_works() {
    let store = SqliteStore::connect("sqlite::memory:").await.unwrap();
    store.migrate().await.unwrap();
    let now = store.now().await.unwrap();
    let op = NewOperation::new(
        "k",
        json!({}),
        &plain_policy(),
        EnqueueOptions::default(),
        now,
    )
    .unwrap();
    let id = store.operation_insert(op).await.unwrap().id;
    let claimed = store
        .operation_claim_by_ids(ClaimByIdsParams {
            kinds: vec![],
            ids: vec![id],
            claimant: claimant(),
        })
        .await
        .unwrap();
    assert_eq!(claimed.len(), 1);
    store
        .operation_complete(CompleteParams {
            id,
            claim_token: claimed[0].claim_token(),
            transition: Transition::succeeded(None),
        })
        .await
        .unwrap();
    let d = store
        .operation_get(OperationGetParams { id })
        .await
        .unwrap()
        .unwrap();
    assert_eq!(d.operation.status, Status::Succeeded);
}
