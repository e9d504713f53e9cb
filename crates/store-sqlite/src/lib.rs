//! oprec-sqlite: oprec's store traits on SQLite, the embedded default for development, tests and
//! single-machine deployments: one database file, no server to run.
//!
//! It applies what core decides (transitions, endings, settlements, the pause rule) and decides
//! nothing itself. Its modules have the PostgreSQL store's names, one per concept (`claim`,
//! `complete`, `rescue`, `redrive`, ...), each function named after the trait method it
//! implements (`traits` only forwards); its static statements are `.sql` files
//! under `src/sql/` with the PostgreSQL store's file names. Two modules exist for SQLite alone:
//! `time` (times as fixed-width UTC text, so comparing the strings compares the times; "now" is
//! always the store's [`Clock`], never SQLite's) and `write` (SQLite has one writer at a time and
//! no `SKIP LOCKED`, so a write that reads before it writes runs in a `BEGIN IMMEDIATE`
//! transaction, and writers of one process queue for their turn instead of meeting at the lock).
//! Lists reach SQL as one JSON array read by `json_each`, so a statement keeps one text whatever
//! the list's length.
//!
//! A handler's effect can be written on this database in a fenced transaction ([`SqliteFencedTx`],
//! [`FencedStore`](oprec_core::FencedStore)): a write transaction that commits with the attempt's
//! completion, or rolls back with it when the claim is stale.
//!
//! Not for: many worker hosts sharing one database (SQLite on a network file system is not safe;
//! use oprec-postgres), nor wake-ups, workers or policies (see oprec-runtime): this crate only
//! reads and writes rows.

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
mod time;
mod traits;
mod wake;
mod workers;
mod write;

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use oprec_core::{Clock, Result, SystemClock};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions};
use sqlx::{ConnectOptions, Connection};
use tokio::sync::Mutex;

pub use error::backend_error;
pub use fenced::SqliteFencedTx;

/// The migrations of `migrations/sqlite`, embedded.
pub static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("../../migrations/sqlite");

/// How long [`SqliteStore::connect`] lets a connection wait for another connection's write lock
/// before the call fails with a (transient) busy error.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// The pool size [`SqliteStore::connect`] uses.
pub const DEFAULT_MAX_CONNECTIONS: u32 = 8;

/// The most operations one enqueue statement carries; a larger batch takes several statements in
/// one transaction, so that the JSON array bound to each (payloads included) stays far below
/// SQLite's limit on the length of one value.
pub const ROWS_PER_STATEMENT: usize = 500;

/// Operation records in a SQLite database file.
#[derive(Clone, Debug)]
pub struct SqliteStore {
    pool: SqlitePool,
    clock: Arc<dyn Clock>,
    /// This process's writing turn (see the `write` module); shared by clones of the store.
    writer: Arc<Mutex<()>>,
}

impl SqliteStore {
    /// Connects to `url` (`sqlite://oprec.db`, `sqlite:///var/lib/oprec.db`, `sqlite::memory:`),
    /// creating the file if it is missing (unless `mode=ro`), with a busy timeout of
    /// [`BUSY_TIMEOUT`] and a pool of [`DEFAULT_MAX_CONNECTIONS`].
    pub async fn connect(url: &str) -> Result<Self> {
        // A URL that does not parse is the caller's input to fix, not a database failure.
        let options: SqliteConnectOptions = url.parse().map_err(|e| {
            oprec_core::Error::InvalidInput(format!(
                "the database URL {}: {e}",
                oprec_core::redact_url(url)
            ))
        })?;
        let options = options.create_if_missing(true).busy_timeout(BUSY_TIMEOUT);
        Self::connect_with(options, DEFAULT_MAX_CONNECTIONS).await
    }

    /// Connects with explicit options and pool size. WAL journal mode (readers never block the
    /// writer) and foreign keys are always switched on; the busy timeout is the one in `options`.
    pub async fn connect_with(options: SqliteConnectOptions, max_connections: u32) -> Result<Self> {
        let options = options
            .journal_mode(SqliteJournalMode::Wal)
            .foreign_keys(true);
        // Switch the file to WAL on one connection before the pool opens others: in the rollback
        // journal mode of a new file, that switch is a write, and two connections making it at
        // once can fail with SQLITE_BUSY rather than wait. Once in WAL, it is a no-op.
        options
            .connect()
            .await
            .map_err(backend_error)?
            .close()
            .await
            .map_err(backend_error)?;
        // Connections to a local file are cheap to keep and reconnecting gains nothing; keeping
        // one open also keeps an in-memory database alive.
        let pool = SqlitePoolOptions::new()
            .max_connections(max_connections.max(1))
            .min_connections(1)
            .idle_timeout(None)
            .max_lifetime(None)
            .connect_with(options)
            .await
            .map_err(backend_error)?;
        Ok(Self::from_pool(pool))
    }

    /// Uses an existing pool, as configured by its owner (who should enable WAL, foreign keys and
    /// a busy timeout, as [`SqliteStore::connect_with`] does). Clone the store rather than call
    /// this twice on one pool: clones share the queue for the writing turn.
    pub fn from_pool(pool: SqlitePool) -> Self {
        SqliteStore {
            pool,
            clock: Arc::new(SystemClock),
            writer: Arc::new(Mutex::new(())),
        }
    }

    /// Reads "now" from `clock` instead of the system clock (tests use a manual clock).
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// The connection pool.
    pub fn pool(&self) -> &SqlitePool {
        &self.pool
    }

    /// "Now" by the store's clock, cut to the microsecond that the stored format keeps.
    fn clock_now(&self) -> DateTime<Utc> {
        time::truncate(self.clock.now())
    }
}
