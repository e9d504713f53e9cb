//! oprec: durable operation records for background work.
//!
//! Each unit of work is a row (identity, kind, immutable payload, status, attempts, next eligible
//! time, deadline, failure class, last error, attempt history) in PostgreSQL or SQLite. A broker,
//! when there is one, only carries "attempt operation N now", so purging or losing it never erases
//! intent. This facade re-exports [`oprec_core`] and [`oprec_runtime`] and, by Cargo feature, the
//! stores and transports:
//!
//! | feature | what it adds |
//! | --- | --- |
//! | `sqlite` (default) | [`sqlite::SqliteStore`], the embedded store |
//! | `postgres` | [`postgres::PgStore`], the production store |
//! | `redis` | [`redis::RedisTransport`], wake-ups on Redis Streams |
//! | `amqp` | [`amqp::AmqpTransport`], wake-ups on RabbitMQ |
//!
//! The in-memory transport ([`MemoryTransport`]) is always there. [`connect`] and
//! [`connect_transport`] pick a backend by URL at run time, for binaries that let an operator
//! choose; libraries should use the concrete types.

pub use oprec_core::*;
pub use oprec_runtime as runtime;
pub use oprec_runtime::{
    Client, Context, Kind, MemoryTransport, PayloadMode, Reconciled, Registry, Worker, WorkerConfig,
};

#[cfg(feature = "amqp")]
pub use oprec_amqp as amqp;
#[cfg(feature = "postgres")]
pub use oprec_postgres as postgres;
#[cfg(feature = "redis")]
pub use oprec_redis as redis;
#[cfg(feature = "sqlite")]
pub use oprec_sqlite as sqlite;

mod url;

pub use url::redact_url;

use std::sync::Arc;

fn scheme(url: &str) -> &str {
    url.split_once(':').map(|(s, _)| s).unwrap_or(url)
}

/// Connects to the store a URL names and returns it behind `dyn Store`: `postgres://` or
/// `postgresql://` (feature `postgres`), `sqlite:` (feature `sqlite`). Does not migrate.
pub async fn connect(url: &str) -> Result<Arc<dyn Store>> {
    match scheme(url) {
        #[cfg(feature = "postgres")]
        "postgres" | "postgresql" => Ok(Arc::new(postgres::PgStore::connect(url).await?)),
        #[cfg(feature = "sqlite")]
        "sqlite" => Ok(Arc::new(sqlite::SqliteStore::connect(url).await?)),
        other => Err(Error::InvalidInput(format!(
            "unsupported database URL scheme {other:?} in {}; this build supports: {}",
            redact_url(url),
            supported_database_schemes().join(", ")
        ))),
    }
}

/// The database URL schemes this build was compiled with.
pub fn supported_database_schemes() -> Vec<&'static str> {
    let mut v = Vec::new();
    if cfg!(feature = "postgres") {
        v.push("postgres://");
    }
    if cfg!(feature = "sqlite") {
        v.push("sqlite:");
    }
    v
}

/// The transport a URL names: `memory://` (in this process only), `redis://` / `rediss://`
/// (feature `redis`), `amqp://` / `amqps://` (feature `amqp`), or `poll` / `none` for no broker
/// (workers poll the store; `Ok(None)`). Broker transports connect lazily, so an enqueue still
/// commits while the broker is down.
pub fn connect_transport(url: &str) -> Result<Option<Arc<dyn Transport>>> {
    match scheme(url) {
        "poll" | "none" | "" => Ok(None),
        "memory" => Ok(Some(Arc::new(MemoryTransport::new()))),
        #[cfg(feature = "redis")]
        "redis" | "rediss" => Ok(Some(Arc::new(redis::RedisTransport::connect_lazy(
            url,
            redis::RedisTransportConfig::default(),
        )?))),
        #[cfg(feature = "amqp")]
        "amqp" | "amqps" => Ok(Some(Arc::new(amqp::AmqpTransport::connect_lazy(
            url,
            amqp::AmqpTransportConfig::default(),
        )?))),
        other => Err(Error::InvalidInput(format!(
            "unsupported transport URL scheme {other:?} in {}; this build supports: {}",
            redact_url(url),
            supported_transport_schemes().join(", ")
        ))),
    }
}

/// The transport URL schemes this build was compiled with.
pub fn supported_transport_schemes() -> Vec<&'static str> {
    let mut v = vec!["memory://", "poll"];
    if cfg!(feature = "redis") {
        v.push("redis://");
    }
    if cfg!(feature = "amqp") {
        v.push("amqp://");
    }
    v
}
