//! Enqueues keep their connection between statements instead of handing it back to the pool
//! (where sqlx tests it with a round trip every time), and give it back once it has sat idle for
//! [`CHECK_CONNECTIONS_IDLE_FOR`], after a failed statement, and when the store closes. A pool
//! too small to spare one keeps none.

mod common;

use std::time::Duration;

use oprec_core::{EnqueueOptions, EnqueueStore, Jitter, NewOperation, Result, RetryPolicy, Store};
use oprec_postgres::{CHECK_CONNECTIONS_IDLE_FOR, PgStore};
use serde_json::json;

/// Connections the pool has handed out and not got back, once the tasks in which the pool takes
/// connections back have had time to run.
async fn in_use(store: &PgStore) -> u32 {
    tokio::time::sleep(Duration::from_millis(300)).await;
    store.pool().size() - store.pool().num_idle() as u32
}

async fn enqueue(store: &PgStore, kind: &str) -> Result<()> {
    let policy = RetryPolicy::builder()
        .timeout(chrono::Duration::seconds(30))
        .max_attempts(3)
        .local_only()
        .jitter(Jitter::None)
        .build()?;
    let op = NewOperation::new(
        kind,
        json!({}),
        &policy,
        EnqueueOptions::default(),
        chrono::Utc::now(),
    )?;
    store.operation_insert_many(vec![op]).await.map(drop)
}

async fn operations(store: &PgStore) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM operations")
        .fetch_one(store.pool())
        .await
        .expect("count")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_enqueue_keeps_its_connection_until_it_sits_idle() {
    let store = common::fresh_store(4).await;
    assert_eq!(
        in_use(&store).await,
        0,
        "nothing in use after the migration"
    );

    enqueue(&store, "kept.first").await.expect("enqueue");
    assert_eq!(in_use(&store).await, 1, "the enqueue's connection is kept");
    for _ in 0..3 {
        enqueue(&store, "kept.next").await.expect("enqueue");
    }
    assert_eq!(
        in_use(&store).await,
        1,
        "the next enqueues take the kept connection and keep it again"
    );

    // Unused for CHECK_CONNECTIONS_IDLE_FOR: given back (the watcher looks once per that span).
    tokio::time::sleep(CHECK_CONNECTIONS_IDLE_FOR * 2).await;
    assert_eq!(in_use(&store).await, 0, "given back once idle");

    enqueue(&store, "kept.later")
        .await
        .expect("an enqueue after");
    assert_eq!(operations(&store).await, 5);
    assert_eq!(in_use(&store).await, 1);

    // Closing the store gives it back at once rather than waiting for it to sit idle.
    let closing = std::time::Instant::now();
    store.close().await;
    assert!(
        closing.elapsed() < CHECK_CONNECTIONS_IDLE_FOR / 2,
        "close took {:?}",
        closing.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_enqueue_gives_its_connection_back() {
    let store = common::fresh_store(4).await;
    // The database refuses one kind (a trigger of this test's own schema).
    sqlx::raw_sql(
        "CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$
         BEGIN RAISE EXCEPTION 'refused by the test'; END $$;
         CREATE TRIGGER refuse BEFORE INSERT ON operations FOR EACH ROW
         WHEN (new.kind = 'kept.refused') EXECUTE FUNCTION refuse();",
    )
    .execute(store.pool())
    .await
    .expect("refusing trigger");

    let refused = enqueue(&store, "kept.refused").await;
    assert!(refused.is_err(), "{refused:?}");
    assert_eq!(in_use(&store).await, 0, "a failed statement keeps nothing");

    enqueue(&store, "kept.accepted").await.expect("enqueue");
    assert_eq!(in_use(&store).await, 1);
    // The kept connection runs the refused statement, and is given back.
    let refused = enqueue(&store, "kept.refused").await;
    assert!(refused.is_err(), "{refused:?}");
    assert_eq!(in_use(&store).await, 0);
    enqueue(&store, "kept.accepted")
        .await
        .expect("enqueue after a refusal");
    assert_eq!(operations(&store).await, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pool_of_three_keeps_no_connection() {
    let store = common::fresh_store(3).await;
    enqueue(&store, "kept.small").await.expect("enqueue");
    assert_eq!(in_use(&store).await, 0);
    let count = store.operation_count().await;
    assert!(count.is_ok(), "{count:?}");
}
