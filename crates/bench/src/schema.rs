//! The benchmark's database and its throw-away schemas: every phase runs in a fresh
//! `oprec_bench_<uuid>` schema, so no phase sees another's rows, dead tuples or statistics.

use std::str::FromStr;

use oprec::Store;
use oprec::postgres::PgStore;
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use sqlx::{AssertSqlSafe, ConnectOptions, Executor};

use crate::Result;

/// The database the benchmark was pointed at, with a small pool outside any bench schema.
pub(crate) struct Database {
    url: String,
    options: PgConnectOptions,
    /// Connections on the database's default search path (statistics, schema management).
    pub admin: PgPool,
    /// Whether this role may run `CHECKPOINT` between phases.
    pub checkpoints: bool,
}

impl Database {
    pub(crate) async fn connect(url: &str) -> Result<Self> {
        // The bulk inserts of the claim-cost phase take seconds by design: no slow-query warnings.
        let options = PgConnectOptions::from_str(url)?.disable_statement_logging();
        let admin = PgPoolOptions::new()
            .max_connections(2)
            .connect_with(options.clone())
            .await?;
        let checkpoints = admin.execute("CHECKPOINT").await.is_ok();
        Ok(Database {
            url: url.to_owned(),
            options,
            admin,
            checkpoints,
        })
    }

    /// A new, empty schema; migrated (the oprec tables) when `migrate` is set.
    pub(crate) async fn schema(&self, pool_size: u32, migrate: bool) -> Result<Schema> {
        let name = format!("oprec_bench_{}", uuid::Uuid::now_v7().simple());
        self.admin
            .execute(AssertSqlSafe(format!("CREATE SCHEMA {name}")))
            .await?;
        let schema = async {
            let pool = oprec::postgres::pool_options()
                .max_connections(pool_size)
                .connect_with(
                    self.options
                        .clone()
                        .options([("search_path", name.as_str())]),
                )
                .await?;
            let store = PgStore::from_pool(pool.clone());
            if migrate {
                store.migrate().await?;
            }
            let sep = if self.url.contains('?') { '&' } else { '?' };
            Ok::<_, crate::Error>(Schema {
                url: format!("{}{sep}options=-csearch_path%3D{name}", self.url),
                name: name.clone(),
                pool,
                store,
            })
        }
        .await;
        if schema.is_err() {
            let _ = self
                .admin
                .execute(AssertSqlSafe(format!("DROP SCHEMA {name} CASCADE")))
                .await;
        }
        schema
    }

    /// Drops `schema` and everything in it.
    pub(crate) async fn drop_schema(&self, schema: Schema) -> Result<()> {
        schema.store.close().await;
        self.admin
            .execute(AssertSqlSafe(format!(
                "SET client_min_messages = warning; DROP SCHEMA {} CASCADE",
                schema.name
            )))
            .await?;
        Ok(())
    }

    /// Writes every dirty page now (`CHECKPOINT`), so that a phase does not pay for the pages the
    /// previous one left behind. Needs a superuser or the `pg_checkpoint` role; without one the
    /// phase starts without it (see [`Database::checkpoints`]).
    pub(crate) async fn checkpoint(&self) {
        if self.checkpoints {
            let _ = self.admin.execute("CHECKPOINT").await;
        }
    }

    /// Transactions committed in this database so far (`pg_stat_database.xact_commit`), after
    /// discarding this session's cached statistics snapshot.
    pub(crate) async fn commits(&self) -> Result<i64> {
        let mut conn = self.admin.acquire().await?;
        conn.execute("SELECT pg_stat_clear_snapshot()").await?;
        Ok(sqlx::query_scalar(
            "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()",
        )
        .fetch_one(&mut *conn)
        .await?)
    }

    /// The database's current write-ahead log position (`pg_current_wal_lsn()`), as text.
    pub(crate) async fn wal_position(&self) -> Result<String> {
        Ok(sqlx::query_scalar("SELECT pg_current_wal_lsn()::text")
            .fetch_one(&self.admin)
            .await?)
    }

    /// Bytes of write-ahead log written since `position` ([`Database::wal_position`]), by every
    /// session of the server: the phase's, and anything else writing meanwhile.
    pub(crate) async fn wal_bytes_since(&self, position: &str) -> Result<f64> {
        Ok(
            sqlx::query_scalar("SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), $1::pg_lsn)::float8")
                .bind(position)
                .fetch_one(&self.admin)
                .await?,
        )
    }

    pub(crate) async fn close(self) {
        self.admin.close().await;
    }
}

/// One phase's schema.
pub(crate) struct Schema {
    /// `oprec_bench_<uuid>`.
    pub name: String,
    /// The database URL with the schema as search path, for the worker process.
    pub url: String,
    /// Connections with the schema as search path.
    pub pool: PgPool,
    /// The oprec store over `pool`.
    pub store: PgStore,
}

/// Runs `phase` in a fresh schema and drops the schema afterwards, whatever the phase returned.
pub(crate) async fn with_schema<T>(
    db: &Database,
    pool_size: u32,
    migrate: bool,
    phase: impl AsyncFnOnce(&Schema) -> Result<T>,
) -> Result<T> {
    let schema = db.schema(pool_size, migrate).await?;
    let result = phase(&schema).await;
    let dropped = db.drop_schema(schema).await;
    let value = result?;
    dropped?;
    Ok(value)
}
