//! A multi-step operation with durable steps: reserve stock, charge the card, persist the order.
//!
//! Each `ctx.step` stores its output when it completes; a later attempt gets the stored output
//! back instead of running the step again. The first attempt fails right after the charge (as if
//! the process had been killed there), the retry resumes at `persist`, and the card is charged
//! exactly once. Run it with:
//!
//! ```text
//! cargo run -p oprec --example steps
//! ```

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use oprec::sqlite::SqliteStore;
use oprec::store::{OperationGetParams, StepsGetParams};
use oprec::{
    Client, EnqueueOptions, Failure, FullStore, Kind, Ladder, MemoryTransport, Registry,
    RetryPolicy, Status, Store, Worker, WorkerConfig,
};
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

/// What the side effects did, counted outside the operation (the "world").
#[derive(Default)]
struct World {
    reservations: AtomicU64,
    charges: AtomicU64,
    orders: AtomicU64,
}

#[derive(Serialize, Deserialize)]
struct Checkout {
    order: String,
    sku: String,
    cents: u64,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let url = format!(
        "sqlite://{}?mode=rwc",
        dir.path().join("steps.db").display()
    );
    let store = SqliteStore::connect(&url).await?;
    store.migrate().await?;
    let store: Arc<dyn FullStore> = Arc::new(store);

    // The kind calls a payment provider, so it declares a ladder: retry 1 s after a failure.
    let policy = RetryPolicy::builder()
        .timeout(chrono::Duration::seconds(10))
        .max_attempts(3)
        .external_io(Ladder::schedule_secs(&[0, 1, 5]))
        .jitter(oprec::Jitter::None)
        .build()?;
    let world = Arc::new(World::default());
    let w = world.clone();
    let checkout = Kind::new("order.checkout", policy, move |ctx, c: Checkout| {
        let w = w.clone();
        async move {
            println!("attempt {}:", ctx.attempt());
            let reservation: String = ctx
                .step("reserve", || async {
                    let n = w.reservations.fetch_add(1, Ordering::SeqCst) + 1;
                    println!("  reserve: reserving 1 x {} (reservation #{n})", c.sku);
                    Ok(format!("res-{n}"))
                })
                .await?;
            let charge: String = ctx
                .step("charge", || async {
                    let n = w.charges.fetch_add(1, Ordering::SeqCst) + 1;
                    println!("  charge: charging {} cents (charge #{n})", c.cents);
                    Ok(format!("ch-{n}"))
                })
                .await?;
            println!("  reserve and charge done: {reservation}, {charge}");
            if ctx.attempt() == 1 {
                // The process "dies" between the charge and the persist. A real crash would
                // leave a vanished attempt that the rescuer re-queues; the retry looks the same.
                println!("  crash right after the charge (simulated)");
                return Err(Failure::transient("simulated crash after the charge step").into());
            }
            let order: String = ctx
                .step("persist", || async {
                    w.orders.fetch_add(1, Ordering::SeqCst);
                    println!(
                        "  persist: writing order {} ({reservation}, {charge})",
                        c.order
                    );
                    Ok(c.order.clone())
                })
                .await?;
            ctx.set_remote_id(order).await?;
            Ok(())
        }
    });
    let registry = Arc::new(Registry::new().register(checkout));
    let transport = Arc::new(MemoryTransport::new());
    let client = Client::new(store.clone(), Some(transport.clone()), registry.clone());
    let op = client
        .enqueue(
            "order.checkout",
            Checkout {
                order: "order-1001".into(),
                sku: "sku-42".into(),
                cents: 1999,
            },
            EnqueueOptions::default(),
        )
        .await?;
    println!("enqueued checkout {}", op.id);

    let mut config = WorkerConfig {
        idle_wait: Duration::from_millis(100),
        ..WorkerConfig::default()
    };
    // Look for due retries often, so the 1 s rung is picked up promptly.
    config.scheduler.interval = Duration::from_millis(100);
    config.scheduler.rewake_after = chrono::Duration::milliseconds(500);
    let stop = CancellationToken::new();
    let running = tokio::spawn(
        Worker::new(store.clone(), Some(transport), registry, config).run(stop.clone()),
    );

    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    let detail = loop {
        let d = store
            .operation_get(OperationGetParams { id: op.id })
            .await?
            .expect("the row exists");
        if d.operation.status.is_terminal() || tokio::time::Instant::now() > deadline {
            break d;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    stop.cancel();
    running.await?;

    let o = &detail.operation;
    let steps = store
        .operation_steps_get(StepsGetParams { id: op.id })
        .await?;
    println!(
        "\noperation {}: {} after {} attempts, remote id {}",
        o.id,
        o.status,
        o.attempt,
        o.remote_id.as_deref().unwrap_or("-")
    );
    for a in &detail.attempts {
        let why = a
            .error
            .as_ref()
            .map(|e| format!(": {e}"))
            .unwrap_or_default();
        println!("  attempt {}: {}{why}", a.attempt, a.outcome);
    }
    let names: Vec<&str> = steps.iter().map(|s| s.name.as_str()).collect();
    println!("  stored steps: {}", names.join(", "));
    let (r, c, p) = (
        world.reservations.load(Ordering::SeqCst),
        world.charges.load(Ordering::SeqCst),
        world.orders.load(Ordering::SeqCst),
    );
    println!("side effects: {r} reservation(s), {c} charge(s), {p} order(s) persisted");

    anyhow::ensure!(
        o.status == Status::Succeeded,
        "expected succeeded, got {}",
        o.status
    );
    anyhow::ensure!(o.attempt == 2, "expected two attempts, got {}", o.attempt);
    anyhow::ensure!((r, c, p) == (1, 1, 1), "each step must run exactly once");
    println!("the retry resumed at persist: charged exactly once");
    Ok(())
}
