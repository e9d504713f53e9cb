//! Opening what the URLs name: the store behind `Arc<dyn Store>`, with the concrete store kept
//! beside it for the few places that need its pool (the `demo_effects` table), and the transport.
//! Also turns "the tables are missing" into "run `oprec migrate` first".

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use oprec::postgres::PgStore;
use oprec::sqlite::SqliteStore;
use oprec::{Clock, OperatorStore, Transport};

use crate::exit::bad;

/// How long opening a PostgreSQL store may take before the command gives up.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The store a URL named, as its concrete type.
#[derive(Clone, Debug)]
pub(crate) enum ConcreteStore {
    /// `sqlite:` URLs.
    Sqlite(SqliteStore),
    /// `postgres://` and `postgresql://` URLs.
    Postgres(PgStore),
}

/// An open store.
#[derive(Clone)]
pub(crate) struct Backend {
    /// The store, for everything that goes through the `Store` and `OperatorStore` traits.
    pub store: Arc<dyn OperatorStore>,
    /// The same store, for direct SQL on its pool.
    pub concrete: ConcreteStore,
    /// The URL with any password masked, for messages.
    pub url: String,
}

impl Backend {
    /// Connects to the store `url` names, on the system clock. Does not migrate.
    pub(crate) async fn connect(url: &str) -> anyhow::Result<Self> {
        Self::connect_with_clock(url, None).await
    }

    /// Connects with `clock` deciding "now" (the demo's virtual clock), or the system clock.
    pub(crate) async fn connect_with_clock(
        url: &str,
        clock: Option<Arc<dyn Clock>>,
    ) -> anyhow::Result<Self> {
        let shown = oprec::redact_url(url);
        let scheme = url.split_once(':').map(|(s, _)| s).unwrap_or(url);
        let opening = || format!("cannot open the database {shown}");
        let concrete = match scheme {
            "sqlite" => {
                let mut s = SqliteStore::connect(url).await.with_context(opening)?;
                if let Some(c) = clock {
                    s = s.with_clock(c);
                }
                ConcreteStore::Sqlite(s)
            }
            "postgres" | "postgresql" => {
                // sqlx retries a refused connection until its pool's acquire timeout (30 s).
                let mut s = tokio::time::timeout(CONNECT_TIMEOUT, PgStore::connect(url))
                    .await
                    .map_err(|_| {
                        anyhow::anyhow!("no answer within {} s", CONNECT_TIMEOUT.as_secs())
                    })
                    .with_context(opening)?
                    .with_context(opening)?;
                if let Some(c) = clock {
                    s = s.with_clock(c);
                }
                ConcreteStore::Postgres(s)
            }
            _ => {
                return Err(bad(format!(
                    "unsupported database URL {shown}; use one of: {}",
                    oprec::supported_database_schemes().join(", ")
                )));
            }
        };
        let store: Arc<dyn OperatorStore> = match &concrete {
            ConcreteStore::Sqlite(s) => Arc::new(s.clone()),
            ConcreteStore::Postgres(s) => Arc::new(s.clone()),
        };
        Ok(Backend {
            store,
            concrete,
            url: shown,
        })
    }

    /// Fails with "run `oprec migrate` first" when the schema is missing.
    pub(crate) async fn ensure_schema(&self) -> anyhow::Result<()> {
        self.store.operation_count().await.map_err(store_error)?;
        Ok(())
    }
}

/// Whether a store error says the tables do not exist (SQLite's "no such table", PostgreSQL's
/// undefined_table).
fn is_missing_schema(e: &oprec::Error) -> bool {
    let text = format!("{e:#}");
    text.contains("no such table")
        || text.contains("42P01")
        || (text.contains("relation \"") && text.contains("does not exist"))
}

/// A store error for the user: a missing schema says what to run.
pub(crate) fn store_error(e: oprec::Error) -> anyhow::Error {
    if is_missing_schema(&e) {
        anyhow::Error::new(e).context("the database has no oprec tables: run `oprec migrate` first")
    } else {
        e.into()
    }
}

/// The transport `url` names; `None` for `poll` (workers claim from the store).
pub(crate) fn transport(url: &str) -> anyhow::Result<Option<Arc<dyn Transport>>> {
    Ok(oprec::connect_transport(url)?)
}
