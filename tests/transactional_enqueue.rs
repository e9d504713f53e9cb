//! Enqueueing inside a transaction the caller owns ([`Client::enqueue_in`]): an application's own
//! row (an order) and the operation it asks for (`shipment.create`) commit together or not at
//! all, on PostgreSQL with Redis and on SQLite. The wake-up goes out only after the commit; a
//! process that dies between its commit and the publish leaves the operation to the scheduler's
//! re-wake.

use std::sync::Arc;
use std::time::Duration;

use oprec_core::{EnqueueOptions, Jitter, RetryPolicy, Status};
use oprec_e2e::{Rig, Running};
use oprec_postgres::PgStore;
use oprec_runtime::{Client, Kind, Registry};
use serde_json::json;

fn registry() -> Arc<Registry> {
    let policy = RetryPolicy::builder()
        .timeout(chrono::Duration::seconds(30))
        .max_attempts(3)
        .local_only()
        .jitter(Jitter::None)
        .build()
        .expect("policy");
    Arc::new(Registry::new().register(Kind::new(
        "shipment.create",
        policy,
        |_ctx, _p: serde_json::Value| async { Ok(()) },
    )))
}

fn keyed(key: &str) -> EnqueueOptions {
    EnqueueOptions {
        idempotency_key: Some(key.to_owned()),
        ..EnqueueOptions::default()
    }
}

async fn pg_count(pg: &PgStore, sql: &'static str) -> i64 {
    sqlx::query_scalar(sql)
        .fetch_one(pg.pool())
        .await
        .expect("count")
}

/// Places order `order` and enqueues its shipment in one transaction; commits or rolls back.
async fn place(
    pg: &PgStore,
    client: &Client,
    order: i64,
    commit: bool,
) -> oprec_runtime::AfterCommit {
    let mut tx = pg.pool().begin().await.expect("begin");
    sqlx::query("INSERT INTO orders (id) VALUES ($1)")
        .bind(order)
        .execute(&mut *tx)
        .await
        .expect("insert order");
    let after = client
        .enqueue_in(
            pg,
            &mut *tx,
            "shipment.create",
            json!({ "order": order }),
            keyed(&format!("order-{order}")),
        )
        .await
        .expect("enqueue in the transaction");
    // Not visible outside the transaction before it commits.
    let seen: i64 =
        sqlx::query_scalar("SELECT count(*) FROM operations WHERE idempotency_key = $1")
            .bind(format!("order-{order}"))
            .fetch_one(pg.pool())
            .await
            .expect("count");
    assert_eq!(seen, 0, "seen before the commit");
    if commit {
        tx.commit().await.expect("commit");
    } else {
        tx.rollback().await.expect("rollback");
    }
    after
}

/// Rolled back: neither the order nor the operation. Committed without its wake-up (the process
/// died between commit and publish): nobody is told, until a scheduler's re-wake finds it.
/// Committed and woken: a worker whose re-wake is an hour away runs it at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_order_and_its_shipment_commit_together_or_not_at_all_on_postgres_redis() {
    let pg = oprec_e2e::rigs::postgres_store().await;
    let broker = oprec_e2e::rigs::postgres_redis().await;
    let rig = Rig {
        store: Arc::new(pg.clone()),
        transport: broker.transport.clone(),
        inject: None,
    };
    sqlx::query("CREATE TABLE orders (id BIGINT PRIMARY KEY)")
        .execute(pg.pool())
        .await
        .expect("orders");
    let reg = registry();
    let client = rig.client(&reg);
    let patient = Running::start(rig.worker(&reg, |c| {
        c.scheduler.rewake_after = chrono::Duration::hours(1);
    }));

    drop(place(&pg, &client, 1, false).await);
    assert_eq!(pg_count(&pg, "SELECT count(*) FROM orders").await, 0);
    assert_eq!(pg_count(&pg, "SELECT count(*) FROM operations").await, 0);

    // Committed, and the process "dies" before publishing: the row waits, woken by nobody.
    let orphan = place(&pg, &client, 2, true).await;
    let orphan_id = orphan.first().expect("enqueued").id;
    drop(orphan);
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(rig.get(orphan_id).await.operation.status, Status::Pending);

    // Committed and woken after the commit: run by the worker that waits an hour to re-wake.
    let woken = place(&pg, &client, 3, true).await.wake().await;
    let woken_id = woken[0].id;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while rig.get(woken_id).await.operation.status != Status::Succeeded {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the woken shipment did not run"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(rig.get(orphan_id).await.operation.status, Status::Pending);
    patient.stop().await;

    // The scheduler's re-wake covers the orphan.
    let prompt = Running::start(rig.worker(&reg, |_| {}));
    rig.wait_for(Status::Succeeded, 2, 20).await;
    prompt.stop().await;
    assert_eq!(
        pg_count(&pg, "SELECT count(*) FROM orders").await,
        2,
        "orders 2 and 3"
    );
    assert_eq!(pg_count(&pg, "SELECT count(*) FROM operations").await, 2);
}

/// Enqueues a shipment with `key` in the transaction on `tx`; what the enqueue found or created.
async fn enqueue(
    client: &Client,
    pg: &PgStore,
    tx: &mut sqlx::PgConnection,
    key: &str,
) -> oprec_core::store::Enqueued {
    client
        .enqueue_in(pg, tx, "shipment.create", json!({}), keyed(key))
        .await
        .expect("enqueue")
        .wake()
        .await
        .remove(0)
}

/// Inside one transaction an idempotency key finds the operation written earlier in it; after
/// the commit, a later transaction's enqueue with the key finds the committed one (and creates
/// nothing); a rolled-back key is free again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idempotency_keys_inside_a_callers_transaction_on_postgres() {
    let pg = oprec_e2e::rigs::postgres_store().await;
    let rig = Rig {
        store: Arc::new(pg.clone()),
        transport: None,
        inject: None,
    };
    let client = rig.client(&registry());
    let mut tx = pg.pool().begin().await.expect("begin");
    let first = enqueue(&client, &pg, &mut tx, "k").await;
    let again = enqueue(&client, &pg, &mut tx, "k").await;
    assert!(first.created && !again.created);
    assert_eq!(first.id, again.id);
    tx.commit().await.expect("commit");

    let mut tx = pg.pool().begin().await.expect("begin");
    let later = enqueue(&client, &pg, &mut tx, "k").await;
    assert!(!later.created);
    assert_eq!(later.id, first.id);
    let fresh = enqueue(&client, &pg, &mut tx, "other").await;
    assert!(fresh.created);
    tx.rollback().await.expect("rollback");

    let mut tx = pg.pool().begin().await.expect("begin");
    let reborn = enqueue(&client, &pg, &mut tx, "other").await;
    assert!(reborn.created, "a rolled-back key is free again");
    assert_ne!(reborn.id, fresh.id);
    tx.commit().await.expect("commit");
    assert_eq!(pg_count(&pg, "SELECT count(*) FROM operations").await, 2);
}

/// The same on SQLite (with the in-memory transport): a transaction begun with
/// `BEGIN IMMEDIATE`, rolled back and committed, and a batch enqueued in it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_order_and_its_shipments_commit_together_or_not_at_all_on_sqlite() {
    let dir = tempfile::tempdir().expect("temp dir");
    let url = format!("sqlite://{}?mode=rwc", dir.path().join("tx.db").display());
    let store = oprec_sqlite::SqliteStore::connect(&url)
        .await
        .expect("sqlite");
    oprec_core::Store::migrate(&store).await.expect("migrate");
    sqlx::query("CREATE TABLE orders (id INTEGER PRIMARY KEY)")
        .execute(store.pool())
        .await
        .expect("orders");
    let rig = Rig {
        store: Arc::new(store.clone()),
        transport: Some(Arc::new(oprec_runtime::MemoryTransport::new())),
        inject: None,
    };
    let reg = registry();
    let client = rig.client(&reg);
    let count = |sql: &'static str| {
        let store = store.clone();
        async move {
            sqlx::query_scalar::<_, i64>(sql)
                .fetch_one(store.pool())
                .await
                .expect("count")
        }
    };
    for (order, commit) in [(1_i64, false), (2, true)] {
        let mut tx = store
            .pool()
            .begin_with("BEGIN IMMEDIATE")
            .await
            .expect("begin");
        sqlx::query("INSERT INTO orders (id) VALUES (?1)")
            .bind(order)
            .execute(&mut *tx)
            .await
            .expect("order");
        let after = client
            .enqueue_many_in(
                &store,
                &mut *tx,
                "shipment.create",
                vec![
                    json!({ "order": order, "box": 1 }),
                    json!({ "order": order, "box": 2 }),
                ],
                EnqueueOptions::default(),
            )
            .await
            .expect("enqueue in the transaction");
        assert_eq!(after.enqueued().len(), 2);
        if commit {
            tx.commit().await.expect("commit");
            after.wake().await;
        } else {
            tx.rollback().await.expect("rollback");
        }
    }
    assert_eq!(count("SELECT count(*) FROM orders").await, 1);
    assert_eq!(count("SELECT count(*) FROM operations").await, 2);
    let running = Running::start(rig.worker(&reg, |c| {
        c.scheduler.rewake_after = chrono::Duration::hours(1);
    }));
    rig.wait_for(Status::Succeeded, 2, 20).await;
    running.stop().await;
}
