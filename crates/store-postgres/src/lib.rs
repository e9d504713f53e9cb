//! oprec-postgres: the [`Store`](oprec_core::Store) and its sibling traits on PostgreSQL, for
//! production: many worker and scheduler processes on many hosts sharing one database.
//!
//! Claims use `FOR UPDATE SKIP LOCKED` over a partial index of pending rows, so many workers claim
//! without blocking each other and the claim's cost does not grow with finished rows. Enqueues and
//! completions are one statement per batch (`UNNEST` of arrays). Only one scheduler publishes
//! wake-ups at a time (a transaction-level advisory lock). With the system clock, leases and
//! eligibility are judged by the database's clock; with a manual clock, by it.
//!
//! The store applies what core decided ([`Transition`](oprec_core::Transition),
//! [`Ending`](oprec_core::Ending), [`Settlement`](oprec_core::Settlement)); it never picks a status
//! or writes a text of its own. Its modules are those of every oprec store crate: `traits` forwards
//! each trait method to the concept module of the same name (`claim`, `complete`, `rescue`, ...),
//! whose static SQL lives in `src/sql/` (see `sql`).
//!
//! A handler's effect can be written on this database in a fenced transaction ([`PgFencedTx`],
//! [`FencedStore`](oprec_core::FencedStore)): it commits with the attempt's completion, or rolls
//! back with it when the claim is stale.
//!
//! Not here: wake-ups, workers or policies (see oprec-runtime); this crate only reads and writes
//! rows.

// The unit tests that need a database (claim.rs, `plans`) make their schema with the integration
// tests' helper (tests/common), which names this crate as its users do.
#[cfg(test)]
extern crate self as oprec_postgres;
#[cfg(test)]
#[path = "../tests/common/mod.rs"]
mod test_common;

mod alerts;
mod archive;
mod audit;
mod cancel;
mod claim;
mod complete;
mod controls;
mod enqueue;
mod error;
mod fenced;
mod filter;
mod kept;
mod kinds;
mod leader;
mod limits;
mod quarantine;
mod read;
mod reconcile;
mod redrive;
mod rescue;
mod retention;
mod row;
mod schedules;
mod sql;
mod stats;
mod steps;
mod traits;
mod wake;
mod workers;

use std::sync::Arc;

use chrono::{DateTime, Utc};
use oprec_core::{Clock, Result, SystemClock};
use sqlx::Connection;
use sqlx::postgres::{PgConnectOptions, PgConnection, PgPool, PgPoolOptions};

pub use error::backend_error;
pub use fenced::PgFencedTx;

/// The migrations of `migrations/postgres`, embedded.
pub static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("../../migrations/postgres");

/// How long a session may sit idle inside a transaction before PostgreSQL ends it. Every
/// transaction here issues its statements back to back, so only a stalled process (stopped, frozen,
/// swapped out) reaches it; without it, a worker stalled between the scheduler's leader lock and
/// its commit would hold that lock, and every other worker's re-wakes, for as long as it stalls.
pub const IDLE_IN_TRANSACTION_TIMEOUT: &str = "15s";

/// How long a pooled connection may have sat idle before the pool checks it (a round trip,
/// `Sync`) on handing it out. sqlx checks every connection on every acquire by default: one more
/// round trip before every statement (2-5% of the single enqueues' throughput when measured,
/// within the noise: BENCHMARKS.md, 2026-12-04 night). A connection in steady use is handed out
/// unchecked; one that sat unused (when a server restart,
/// a proxy's idle timeout or a dropped network is likeliest to have ended it unseen) is checked,
/// and replaced if it is gone.
pub const CHECK_CONNECTIONS_IDLE_FOR: std::time::Duration = std::time::Duration::from_secs(1);

/// The pool's settings every oprec store uses (its size aside): a connection is checked before it
/// is handed out only when it has been idle for [`CHECK_CONNECTIONS_IDLE_FOR`].
pub fn pool_options() -> PgPoolOptions {
    PgPoolOptions::new()
        .test_before_acquire(false)
        .before_acquire(|conn, meta| {
            Box::pin(async move {
                if meta.idle_for >= CHECK_CONNECTIONS_IDLE_FOR {
                    conn.ping().await?;
                }
                Ok(true)
            })
        })
}

/// The most sessions a store's pool opens unless told otherwise ([`PgStore::connect_sized`]).
pub const DEFAULT_MAX_CONNECTIONS: u32 = 10;

/// Operation records in PostgreSQL.
#[derive(Clone, Debug)]
pub struct PgStore {
    pool: PgPool,
    clock: Arc<dyn Clock>,
    /// Whether any fleet limit exists, as last looked up: claims skip the limits when none does.
    limits: Arc<limits::Presence>,
    /// The connection enqueues keep between their statements (`kept`).
    kept: Arc<kept::Kept>,
}

impl PgStore {
    /// A transaction opened by `opening` (`BEGIN` and the planner settings its statement needs:
    /// [`sql::WALK_PENDING_IN_ORDER`], [`sql::MATCH_BATCH_BY_HASH`]) in one round trip.
    pub(crate) async fn begin_with(
        &self,
        opening: &'static str,
    ) -> Result<sqlx::Transaction<'static, sqlx::Postgres>> {
        self.pool.begin_with(opening).await.map_err(backend_error)
    }

    /// Connects to `url` (`postgres://user@host/db`; TLS via `sslmode=verify-full`), with a pool
    /// of at most [`DEFAULT_MAX_CONNECTIONS`] sessions.
    pub async fn connect(url: &str) -> Result<Self> {
        Self::connect_sized(url, DEFAULT_MAX_CONNECTIONS).await
    }

    /// Connects to `url` with a pool of at most `max_connections` sessions (at least one): every
    /// process that opens a store holds up to that many of the server's `max_connections` (100 by
    /// default), so a fleet of many workers may need fewer each.
    pub async fn connect_sized(url: &str, max_connections: u32) -> Result<Self> {
        // A URL that does not parse is the caller's input to fix, not a database failure.
        let options: PgConnectOptions = url.parse().map_err(|e| {
            oprec_core::Error::InvalidInput(format!(
                "the database URL {}: {e}",
                oprec_core::redact_url(url)
            ))
        })?;
        Self::connect_with(options, max_connections.max(1)).await
    }

    /// Connects with explicit options and pool size. Sessions get
    /// [`IDLE_IN_TRANSACTION_TIMEOUT`] unless the options set one.
    pub async fn connect_with(options: PgConnectOptions, max_connections: u32) -> Result<Self> {
        let set = options
            .get_options()
            .is_some_and(|o| o.contains("idle_in_transaction_session_timeout"));
        let options = if set {
            options
        } else {
            options.options([(
                "idle_in_transaction_session_timeout",
                IDLE_IN_TRANSACTION_TIMEOUT,
            )])
        };
        // One connection of its own first: the pool retries a refused connection until its
        // acquire timeout, which would report a PostgreSQL that is down (or a wrong port) as a
        // slow one. A direct connection fails at once, saying why.
        let probe = PgConnection::connect_with(&options)
            .await
            .map_err(backend_error)?;
        let _ = probe.close().await;
        let pool = pool_options()
            .max_connections(max_connections)
            .connect_with(options)
            .await
            .map_err(backend_error)?;
        Ok(Self::from_pool(pool))
    }

    /// Uses an existing pool.
    pub fn from_pool(pool: PgPool) -> Self {
        PgStore {
            pool,
            clock: Arc::new(SystemClock),
            limits: Arc::default(),
            kept: Arc::default(),
        }
    }

    /// Judges time by `clock` instead of the database (tests use a manual clock).
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// The connection pool. One of its connections may be in use while the store is idle: the
    /// one enqueues keep between their statements, given back once unused for
    /// [`CHECK_CONNECTIONS_IDLE_FOR`] (or by [`PgStore::close`]).
    pub fn pool(&self) -> &PgPool {
        &self.pool
    }

    /// Closes the pool ([`PgPool::close`]) after giving back the connection enqueues keep
    /// between their statements, which the pool would otherwise wait for until it sat idle for
    /// [`CHECK_CONNECTIONS_IDLE_FOR`]; then waits for the connections still in use.
    pub async fn close(&self) {
        self.kept.give_back();
        self.pool.close().await;
    }

    /// The value bound as "now" (`$1` in most statements): `None` lets SQL fall back to the
    /// database's `now()`, so that with the system clock every host judges time by one clock.
    fn now_bind(&self) -> Option<DateTime<Utc>> {
        (!self.clock.is_system()).then(|| self.clock.now())
    }
}
