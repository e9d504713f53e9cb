//! oprec: durable operation records for background work.
//!
//! Each unit of work is a row (identity, kind, immutable payload, status, attempts, next eligible
//! time, deadline, failure class, last error, attempt history) in PostgreSQL or SQLite. A broker,
//! when there is one, only carries "attempt operation N now", so purging or losing it never erases
//! intent. This facade re-exports [`oprec_core`] and, by Cargo feature, the stores:
//!
//! | feature | what it adds |
//! | --- | --- |
//! | `sqlite` (default) | [`sqlite::SqliteStore`], the embedded store |
//! | `postgres` | [`postgres::PgStore`], the production store |
//!
//! [`connect`] picks a store by URL at run time (`sqlite:` or `postgres://`), for binaries that
//! let an operator choose; libraries should use the concrete store types.

pub use oprec_core::*;

#[cfg(feature = "postgres")]
pub use oprec_postgres as postgres;
#[cfg(feature = "sqlite")]
pub use oprec_sqlite as sqlite;

use std::sync::Arc;

/// Connects to the store a URL names and returns it behind `dyn Store`: `postgres://` or
/// `postgresql://` (feature `postgres`), `sqlite:` (feature `sqlite`). Does not migrate.
pub async fn connect(url: &str) -> Result<Arc<dyn Store>> {
    let scheme = url.split(':').next().unwrap_or_default();
    match scheme {
        #[cfg(feature = "postgres")]
        "postgres" | "postgresql" => Ok(Arc::new(postgres::PgStore::connect(url).await?)),
        #[cfg(feature = "sqlite")]
        "sqlite" => Ok(Arc::new(sqlite::SqliteStore::connect(url).await?)),
        _ => Err(Error::InvalidInput(format!(
            "unsupported database URL scheme {scheme:?}; this build supports: {}",
            supported_schemes().join(", ")
        ))),
    }
}

/// The database URL schemes this build was compiled with.
pub fn supported_schemes() -> Vec<&'static str> {
    let mut v = Vec::new();
    if cfg!(feature = "postgres") {
        v.push("postgres://");
    }
    if cfg!(feature = "sqlite") {
        v.push("sqlite:");
    }
    v
}
