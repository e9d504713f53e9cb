//! The quickstart with the broker chosen at compile time and the URLs at run time.
//!
//! Which brokers exist is a Cargo feature of the `oprec` crate (`redis`, `amqp`; with neither,
//! only the in-memory transport and poll-only). Which one runs is the URL in
//! `OPREC_TRANSPORT_URL` (default `memory://`; `poll` for no broker). The store comes from
//! `OPREC_DATABASE_URL` (default: a SQLite file in a temporary folder; `postgres://` with
//! `--features postgres`). Run it with:
//!
//! ```text
//! cargo run -p oprec --example choose_broker
//! OPREC_TRANSPORT_URL=redis://127.0.0.1:6379 cargo run -p oprec --features redis --example choose_broker
//! OPREC_TRANSPORT_URL=amqp://guest:guest@127.0.0.1:5672/%2f \
//!     cargo run -p oprec --features amqp --example choose_broker
//! OPREC_DATABASE_URL=postgres://postgres@127.0.0.1:5432/test \
//!     cargo run -p oprec --features postgres,redis --example choose_broker
//! ```

use std::sync::Arc;
use std::time::Duration;

use oprec::store::OperationGetParams;
use oprec::{
    Client, EnqueueOptions, FullStore, Kind, Registry, RetryPolicy, Status, Store, Worker,
    WorkerConfig,
};
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

#[derive(Serialize, Deserialize)]
struct Welcome {
    email: String,
}

/// The store a URL names. Libraries use the concrete types; a binary that lets its operator
/// choose matches on the scheme like this (or uses `oprec::connect` when `Store` is enough).
async fn open_store(url: &str) -> anyhow::Result<Arc<dyn FullStore>> {
    match url.split_once(':').map(|(s, _)| s) {
        #[cfg(feature = "postgres")]
        Some("postgres" | "postgresql") => {
            let s = oprec::postgres::PgStore::connect(url).await?;
            s.migrate().await?;
            Ok(Arc::new(s))
        }
        Some("sqlite") => {
            let s = oprec::sqlite::SqliteStore::connect(url).await?;
            s.migrate().await?;
            Ok(Arc::new(s))
        }
        _ => anyhow::bail!(
            "unsupported database URL {}; this build supports {}",
            oprec::redact_url(url),
            oprec::supported_database_schemes().join(", ")
        ),
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let database_url = std::env::var("OPREC_DATABASE_URL").unwrap_or_else(|_| {
        format!(
            "sqlite://{}?mode=rwc",
            dir.path().join("choose.db").display()
        )
    });
    let transport_url = std::env::var("OPREC_TRANSPORT_URL").unwrap_or_else(|_| "memory://".into());
    println!(
        "this build's transports: {}",
        oprec::supported_transport_schemes().join(", ")
    );
    println!(
        "store {}, transport {}",
        oprec::redact_url(&database_url),
        oprec::redact_url(&transport_url)
    );

    let store = open_store(&database_url).await?;
    // `None` for `poll`: the worker claims straight from the store.
    let transport = oprec::connect_transport(&transport_url)?;

    let policy = RetryPolicy::builder()
        .timeout(chrono::Duration::seconds(10))
        .max_attempts(3)
        .local_only()
        .jitter(oprec::Jitter::None)
        .build()?;
    let registry = Arc::new(Registry::new().register(Kind::new(
        "email.welcome",
        policy,
        |ctx, w: Welcome| async move {
            println!(
                "handler: welcome email to {} (attempt {})",
                w.email,
                ctx.attempt()
            );
            Ok(())
        },
    )));

    let client = Client::new(store.clone(), transport.clone(), registry.clone());
    let op = client
        .enqueue(
            "email.welcome",
            Welcome {
                email: "ada@example.com".into(),
            },
            EnqueueOptions::default(),
        )
        .await?;
    println!("enqueued operation {}", op.id);

    let config = WorkerConfig {
        idle_wait: Duration::from_millis(100),
        ..WorkerConfig::default()
    };
    let stop = CancellationToken::new();
    let running =
        tokio::spawn(Worker::new(store.clone(), transport, registry, config).run(stop.clone()));
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    let status = loop {
        let o = store
            .operation_get(OperationGetParams { id: op.id })
            .await?
            .expect("exists")
            .operation;
        if o.status.is_terminal() || tokio::time::Instant::now() > deadline {
            break o.status;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    stop.cancel();
    running.await?;
    println!("operation {}: {status}", op.id);
    anyhow::ensure!(
        status == Status::Succeeded,
        "expected succeeded, got {status}"
    );
    Ok(())
}
