//! Exactly once and at least once, side by side. A payout is booked in a ledger table on the
//! store's own database through the fenced transaction, so the row and the operation's `succeeded`
//! commit together or not at all: exactly once, whatever crashes, stops or duplicate wake-ups
//! happen. The receipt email goes to a provider elsewhere: at least once, its window narrowed by
//! asking whether the claim is still current just before the call. SQLite in a temporary file and
//! the in-memory transport: no services. Run it with:
//!
//! ```text
//! cargo run -p oprec --example fenced
//! ```

use std::sync::Arc;
use std::time::Duration;

use oprec::sqlite::SqliteStore;
use oprec::{
    Client, Context, EnqueueOptions, Failure, FullStore, Kind, MemoryTransport, Registry,
    RetryPolicy, Store, Worker, WorkerConfig,
};
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

#[derive(Serialize, Deserialize)]
struct Payout {
    account: String,
    cents: i64,
}

/// The remote side of the receipt: here it only prints.
async fn send_receipt(account: &str, idempotency_key: &str) -> anyhow::Result<()> {
    println!("receipt sent to {account} (idempotency key {idempotency_key})");
    Ok(())
}

/// The handler: the receipt (at least once), then the booking (exactly once).
async fn book(ctx: Context, ledger: SqliteStore, p: Payout) -> anyhow::Result<()> {
    // At least once: a call elsewhere can run twice (a stall after it, a crash before the
    // outcome). Ask just before it whether the claim is still this worker's; the provider
    // deduplicates on the effect key. Work spawned here would stop on ctx.cancelled().
    if !ctx.claim_current().await? {
        return Err(Failure::transient("the claim was taken over before the receipt").into());
    }
    send_receipt(&p.account, ctx.effect_key()).await?;

    // Exactly once: the row commits with the attempt's success, only while the claim is current.
    let mut tx = ctx.fenced(&ledger).await?;
    sqlx::query("INSERT INTO payouts (effect_key, account, cents) VALUES (?1, ?2, ?3)")
        .bind(ctx.effect_key())
        .bind(&p.account)
        .bind(p.cents)
        .execute(tx.conn())
        .await?;
    // A stale claim is Err(StaleClaim): everything rolled back, another worker has the operation.
    tx.commit().await?;
    Ok(())
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let url = format!(
        "sqlite://{}?mode=rwc",
        dir.path().join("fenced.db").display()
    );
    let ledger = SqliteStore::connect(&url).await?;
    ledger.migrate().await?;
    sqlx::query("CREATE TABLE payouts (effect_key TEXT PRIMARY KEY, account TEXT, cents INTEGER)")
        .execute(ledger.pool())
        .await?;
    let store: Arc<dyn FullStore> = Arc::new(ledger.clone());
    let books = ledger.clone();

    let policy = RetryPolicy::builder()
        .timeout(chrono::Duration::seconds(10))
        .max_attempts(3)
        .local_only()
        .jitter(oprec::Jitter::None)
        .build()?;
    let kind = Kind::new("payout.book", policy, move |ctx, p: Payout| {
        book(ctx, ledger.clone(), p)
    });
    let registry = Arc::new(Registry::new().register(kind));
    let transport = Arc::new(MemoryTransport::new());
    let client = Client::new(store.clone(), Some(transport.clone()), registry.clone());
    for (account, cents) in [("acct-1", 1250), ("acct-2", 990)] {
        let payout = Payout {
            account: account.into(),
            cents,
        };
        client
            .enqueue("payout.book", payout, EnqueueOptions::default())
            .await?;
    }

    let config = WorkerConfig {
        idle_wait: Duration::from_millis(100),
        ..WorkerConfig::default()
    };
    let worker = Worker::new(store, Some(transport), registry, config);
    let report = worker
        .run_until_idle(Duration::from_millis(300), CancellationToken::new())
        .await;
    let booked: i64 = sqlx::query_scalar("SELECT count(*) FROM payouts")
        .fetch_one(books.pool())
        .await?;
    println!(
        "{} succeeded, {booked} payouts booked",
        report.stats.succeeded
    );
    anyhow::ensure!(report.stats.succeeded == 2 && booked == 2);
    Ok(())
}
