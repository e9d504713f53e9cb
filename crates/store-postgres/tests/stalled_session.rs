//! A worker stalled inside a transaction (SIGSTOP, a frozen VM) must not hold the scheduler's
//! leader lock for as long as it stalls: PostgreSQL ends a session idle in a transaction after
//! `IDLE_IN_TRANSACTION_TIMEOUT`, and another scheduler leads again.

mod common;

use std::time::{Duration as StdDuration, Instant};

use chrono::Utc;
use oprec_core::maintenance::WakeDueParams;
use oprec_core::{
    EnqueueOptions, EnqueueStore, Ladder, MaintenanceStore, NewOperation, RetryPolicy,
};
use oprec_postgres::{IDLE_IN_TRANSACTION_TIMEOUT, PgStore};
use sqlx::postgres::PgConnectOptions;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_scheduler_session_is_ended_and_another_leads() {
    let store = common::fresh_store(2).await;
    let limit: String = sqlx::query_scalar("SHOW idle_in_transaction_session_timeout")
        .fetch_one(store.pool())
        .await
        .expect("show");
    assert_eq!(
        limit, IDLE_IN_TRANSACTION_TIMEOUT,
        "the store's sessions carry the limit"
    );

    let policy = RetryPolicy::builder()
        .timeout(chrono::Duration::seconds(30))
        .max_attempts(3)
        .external_io(Ladder::schedule_secs(&[0, 1, 2]))
        .jitter(oprec_core::Jitter::None)
        .build()
        .expect("policy");
    let op = NewOperation::new(
        "k",
        serde_json::json!({}),
        &policy,
        EnqueueOptions::default(),
        Utc::now(),
    )
    .expect("new operation");
    let id = store.operation_insert(op).await.expect("enqueue").id;

    // The stalled worker: a session of the same schema (with a 1 s limit, to keep the test short)
    // takes the scheduler's lock in a transaction and then does nothing.
    let schema: String = sqlx::query_scalar("SELECT current_schema()")
        .fetch_one(store.pool())
        .await
        .expect("schema");
    let options: PgConnectOptions = common::database_url().parse().expect("url");
    let stalled = PgStore::connect_with(
        options.options([
            ("search_path", schema.as_str()),
            ("idle_in_transaction_session_timeout", "1s"),
        ]),
        1,
    )
    .await
    .expect("connect");
    let mut tx = stalled.pool().begin().await.expect("begin");
    let leader: bool = sqlx::query_scalar(
        "SELECT pg_try_advisory_xact_lock(hashtext(current_schema() || '.oprec.scheduler'))",
    )
    .fetch_one(&mut *tx)
    .await
    .expect("lock");
    assert!(leader);

    let wake = || store.operation_wake_due(WakeDueParams::all(chrono::Duration::seconds(30), 10));
    assert_eq!(
        wake().await.expect("wake"),
        vec![],
        "not the leader while the stalled session holds the lock"
    );
    // Once PostgreSQL ends the stalled session, this store leads and wakes the operation.
    let started = Instant::now();
    let woken = loop {
        let ids = wake().await.expect("wake");
        if !ids.is_empty() || started.elapsed() > StdDuration::from_secs(20) {
            break ids;
        }
        tokio::time::sleep(StdDuration::from_millis(100)).await;
    };
    let woken: Vec<_> = woken.into_iter().map(|w| w.id).collect();
    assert_eq!(woken, vec![id], "woken once the stalled session was ended");
    assert!(
        tx.commit().await.is_err(),
        "the stalled session was ended by the server"
    );
}
