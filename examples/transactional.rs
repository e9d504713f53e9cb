//! An order and the shipment it asks for, committed together or not at all: the application
//! writes its own row and enqueues `shipment.create` in one transaction it owns, so there is no
//! dual write (an order without its shipment because the process died after the commit, or a
//! shipment for an order that rolled back). The wake-up is published after the commit. SQLite in
//! a temporary file and the in-memory transport: no services. Run it with:
//!
//! ```text
//! cargo run -p oprec --example transactional
//! ```
//!
//! On PostgreSQL it is the same with `PgStore` and `&mut *tx` of a `sqlx::Transaction<'_,
//! Postgres>` from any pool on the store's database.

use std::sync::Arc;
use std::time::Duration;

use oprec::sqlite::SqliteStore;
use oprec::{
    Client, EnqueueOptions, FullStore, Kind, MemoryTransport, Registry, RetryPolicy, Status, Store,
    Worker, WorkerConfig,
};
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

#[derive(Serialize, Deserialize)]
struct Shipment {
    order: i64,
}

/// Places an order: the order's row and its shipment operation in one transaction, committed
/// when `commit` is true and rolled back otherwise (as a failed validation after the insert
/// would). The operation's id when it committed.
async fn place_order(
    store: &SqliteStore,
    client: &Client,
    order: i64,
    commit: bool,
) -> anyhow::Result<Option<oprec::OperationId>> {
    // BEGIN IMMEDIATE: SQLite's write lock from the start (see TransactionalEnqueue on SqliteStore).
    let mut tx = store.pool().begin_with("BEGIN IMMEDIATE").await?;
    sqlx::query("INSERT INTO orders (id) VALUES (?1)")
        .bind(order)
        .execute(&mut *tx)
        .await?;
    let shipment = client
        .enqueue_in(
            store,
            &mut *tx,
            "shipment.create",
            Shipment { order },
            EnqueueOptions {
                idempotency_key: Some(format!("order-{order}")),
                ..EnqueueOptions::default()
            },
        )
        .await?;
    if !commit {
        tx.rollback().await?;
        // Nothing to publish: dropping `shipment` publishes nothing.
        drop(shipment);
        return Ok(None);
    }
    tx.commit().await?;
    let enqueued = shipment.wake().await;
    Ok(enqueued.first().map(|e| e.id))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let url = format!("sqlite://{}?mode=rwc", dir.path().join("shop.db").display());
    let shop = SqliteStore::connect(&url).await?;
    shop.migrate().await?;
    sqlx::query("CREATE TABLE orders (id INTEGER PRIMARY KEY)")
        .execute(shop.pool())
        .await?;
    let store: Arc<dyn FullStore> = Arc::new(shop.clone());

    let policy = RetryPolicy::builder()
        .timeout(chrono::Duration::seconds(10))
        .max_attempts(3)
        .local_only()
        .jitter(oprec::Jitter::None)
        .build()?;
    let kind = Kind::new("shipment.create", policy, |_ctx, s: Shipment| async move {
        println!("shipment created for order {}", s.order);
        Ok(())
    });
    let registry = Arc::new(Registry::new().register(kind));
    let transport = Arc::new(MemoryTransport::new());
    let client = Client::new(store.clone(), Some(transport.clone()), registry.clone());

    let kept = place_order(&shop, &client, 1, true).await?;
    let dropped = place_order(&shop, &client, 2, false).await?;
    let shown = kept.map(|id| id.to_string()).unwrap_or_default();
    println!("order 1 committed with shipment {shown}; order 2 rolled back with its shipment");

    let config = WorkerConfig {
        idle_wait: Duration::from_millis(100),
        ..WorkerConfig::default()
    };
    let worker = Worker::new(store.clone(), Some(transport), registry, config);
    let report = worker
        .run_until_idle(Duration::from_millis(300), CancellationToken::new())
        .await;
    let orders: Vec<i64> = sqlx::query_scalar("SELECT id FROM orders")
        .fetch_all(shop.pool())
        .await?;
    let operations: i64 = sqlx::query_scalar("SELECT count(*) FROM operations")
        .fetch_one(shop.pool())
        .await?;
    let id = kept.ok_or_else(|| anyhow::anyhow!("order 1's shipment was not enqueued"))?;
    let status = store
        .operation_get(oprec::store::OperationGetParams { id })
        .await?
        .map(|d| d.operation.status);
    println!(
        "orders {orders:?}, {operations} operation(s), shipment {status:?}, {} succeeded",
        report.stats.succeeded
    );
    anyhow::ensure!(dropped.is_none() && orders == [1] && operations == 1);
    anyhow::ensure!(status == Some(Status::Succeeded) && report.stats.succeeded == 1);
    Ok(())
}
