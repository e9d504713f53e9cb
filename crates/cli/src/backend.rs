//! Opening what the URLs name: the store (through the facade's [`oprec::open`], behind every
//! store trait, with the concrete store kept beside it for the few places that need its pool:
//! the demo's `demo_effects` table), and the transport. A store error that says the tables are
//! missing reads "run `oprec migrate` first" ([`oprec::Error::SchemaMissing`]).

use std::sync::Arc;

use anyhow::Context as _;
use oprec::{AnyStore, Clock, ConnectOptions, FullStore, Transport};

use crate::cli::Global;
use crate::exit::bad;

/// An open store.
#[derive(Clone)]
pub(crate) struct Backend {
    /// The store, for everything that goes through the store traits.
    pub store: Arc<dyn FullStore>,
    /// The same store, for direct SQL on its pool.
    pub concrete: AnyStore,
    /// The URL with any password masked, for messages.
    pub url: String,
}

impl Backend {
    /// Connects to the store `--database-url` names, with a pool of `--db-connections`, on the
    /// system clock. Does not migrate.
    pub(crate) async fn open(global: &Global) -> anyhow::Result<Self> {
        Self::connect_with(&global.database_url, None, global.db_connections).await
    }

    /// Connects to the store `url` names, on the system clock, with the store's default pool.
    /// Does not migrate.
    pub(crate) async fn connect(url: &str) -> anyhow::Result<Self> {
        Self::connect_with(url, None, None).await
    }

    /// Connects with `clock` deciding "now" (the demo's virtual clock), or the system clock, and a
    /// pool of at most `max_connections` sessions (`None`: the store's default).
    pub(crate) async fn connect_with(
        url: &str,
        clock: Option<Arc<dyn Clock>>,
        max_connections: Option<u32>,
    ) -> anyhow::Result<Self> {
        let shown = oprec::redact_url(url);
        let options = ConnectOptions {
            clock,
            max_connections,
            ..ConnectOptions::default()
        };
        let concrete = match oprec::open(url, &options).await {
            Ok(s) => s,
            Err(oprec::Error::InvalidInput(m)) => return Err(bad(m)),
            Err(e) => {
                return Err(e).with_context(|| format!("cannot open the database {shown}"));
            }
        };
        Ok(Backend {
            store: concrete.to_dyn(),
            concrete,
            url: shown,
        })
    }

    /// Fails with "run `oprec migrate` first" when the schema is missing.
    pub(crate) async fn ensure_schema(&self) -> anyhow::Result<()> {
        self.store.operation_count().await?;
        Ok(())
    }
}

/// A store error for the user. The store's own error says what to do when the schema is missing
/// ([`oprec::Error::SchemaMissing`]).
pub(crate) fn store_error(e: oprec::Error) -> anyhow::Error {
    e.into()
}

/// The transport `url` names; `None` for `poll` (workers claim from the store).
pub(crate) fn transport(url: &str) -> anyhow::Result<Option<Arc<dyn Transport>>> {
    Ok(oprec::connect_transport(url)?)
}
