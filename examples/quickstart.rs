//! The smallest oprec program: define a kind (payload type, handler, retry policy), enqueue one
//! operation, run a worker until it succeeds, and look at the record it left. SQLite in a
//! temporary file and the in-memory transport: no services. Run it with:
//!
//! ```text
//! cargo run -p oprec --example quickstart
//! ```

use std::sync::Arc;
use std::time::Duration;

use oprec::sqlite::SqliteStore;
use oprec::store::OperationGetParams;
use oprec::{
    Client, EnqueueOptions, FullStore, Kind, MemoryTransport, Registry, RetryPolicy, Status, Store,
    Worker, WorkerConfig,
};
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

/// The payload: an immutable JSON snapshot stored with the operation at enqueue.
#[derive(Serialize, Deserialize)]
struct Welcome {
    email: String,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    // 1. A store. The row in its `operations` table is the record of intent.
    let dir = tempfile::tempdir()?;
    let url = format!(
        "sqlite://{}?mode=rwc",
        dir.path().join("quickstart.db").display()
    );
    let store = SqliteStore::connect(&url).await?;
    store.migrate().await?;
    let store: Arc<dyn FullStore> = Arc::new(store);

    // 2. A kind: a name, a payload type, a handler and a policy. The policy is a decision, not a
    //    default: leaving out the timeout, the bound or the I/O declaration does not compile.
    let policy = RetryPolicy::builder()
        .timeout(chrono::Duration::seconds(10))
        .max_attempts(3)
        .local_only()
        .jitter(oprec::Jitter::None)
        .build()?;
    let welcome = Kind::new("email.welcome", policy, |ctx, w: Welcome| async move {
        println!(
            "handler: sending the welcome email to {} (operation {}, attempt {})",
            w.email,
            ctx.id(),
            ctx.attempt()
        );
        Ok(())
    });
    let registry = Arc::new(Registry::new().register(welcome));

    // 3. A transport: the broker only says "attempt operation N now". In memory here.
    let transport = Arc::new(MemoryTransport::new());

    // 4. Enqueue: the row commits first, then the wake-up is published.
    let client = Client::new(store.clone(), Some(transport.clone()), registry.clone());
    let op = client
        .enqueue(
            "email.welcome",
            Welcome {
                email: "ada@example.com".into(),
            },
            EnqueueOptions::default(),
        )
        .await?;
    println!("enqueued operation {} (kind email.welcome)", op.id);

    // 5. A worker: takes the wake-up, claims the row, runs the handler, records the outcome.
    let stop = CancellationToken::new();
    let config = WorkerConfig {
        idle_wait: Duration::from_millis(100),
        ..WorkerConfig::default()
    };
    let worker = Worker::new(store.clone(), Some(transport), registry, config);
    let running = tokio::spawn(worker.run(stop.clone()));

    // 6. Watch the row until it is terminal, then stop the worker (it drains and exits).
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
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
    let report = running.await?;

    let o = &detail.operation;
    println!(
        "operation {}: {} after {} attempt(s)",
        o.id, o.status, o.attempt
    );
    for a in &detail.attempts {
        println!("  attempt {}: {}", a.attempt, a.outcome);
    }
    println!(
        "worker stopped: {} claimed, {} released",
        report.stats.claimed, report.released
    );
    anyhow::ensure!(
        o.status == Status::Succeeded,
        "expected succeeded, got {}",
        o.status
    );
    anyhow::ensure!(o.attempt == 1, "expected one attempt, got {}", o.attempt);
    Ok(())
}
