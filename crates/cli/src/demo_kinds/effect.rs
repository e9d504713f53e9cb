//! `demo.effect`: serves the exactly-once tests, which compare effects with executions. Every
//! execution counts a call in `demo_effects` (on the store's own database); the row's existence
//! is the effect, inserted once per effect key. Then the attempt succeeds with the effect key as
//! the remote id. The effect being keyed, a failure to record the remote id after it is
//! transient (a retry cannot repeat it), and the reconcile hook answers by looking the key up.
//!
//! The payload (an object; `{}` for none of them) may hold pauses, so that a fault test can kill
//! or stop the worker at a known point of the attempt:
//!
//! - `sleep_before_ms`: before the effect (a kill then leaves no effect);
//! - `sleep_after_ms`: after the effect, before the remote id is recorded and the outcome written
//!   (a kill then leaves the effect without an outcome: the retry must not make a second one);
//! - `sleep_attempts`: pause only on attempts 1..=N (default: every attempt), so the retry after
//!   the fault runs at once.
//!
//! With `"fenced": true` the call is counted and the effect made in the attempt's fenced
//! transaction ([`Context::fenced`]), which commits them with the attempt's success only while
//! the claim is current: the calls then equal the operations exactly, whatever kills and stops
//! the workers suffer (the pause after the effect is inside the transaction).

use std::time::Duration;

use chrono::Utc;
use oprec::{Context, Failure, Kind, Reconciled, RetryPolicy};
use serde::Deserialize;

use super::DEPENDENCY;
use oprec::AnyStore;

/// The table's schema; the same text on SQLite and PostgreSQL.
const CREATE: &str = "CREATE TABLE IF NOT EXISTS demo_effects (
    effect_key TEXT PRIMARY KEY,
    calls INTEGER NOT NULL DEFAULT 0,
    applied_at TEXT
)";

/// Counts a call for an effect key, creating the effect on the first (SQLite).
const RECORD_SQLITE: &str =
    "INSERT INTO demo_effects (effect_key, calls, applied_at) VALUES (?1, 1, ?2)
     ON CONFLICT (effect_key) DO UPDATE SET calls = demo_effects.calls + 1";

/// Counts a call for an effect key, creating the effect on the first (PostgreSQL).
const RECORD_POSTGRES: &str =
    "INSERT INTO demo_effects (effect_key, calls, applied_at) VALUES ($1, 1, $2)
     ON CONFLICT (effect_key) DO UPDATE SET calls = demo_effects.calls + 1";

/// Names the attempt's operation in the session while its fenced transaction is open
/// (PostgreSQL; `SET LOCAL`, so it ends with the transaction): `pg_stat_activity` then shows
/// `<worker name> op <id>` for a handler inside the fence, which is how the fault test knows
/// which operation a worker it stops there was working on, apart from claims waiting in its
/// buffer.
const NAME_IN_SESSION: &str = "SELECT set_config('application_name', \
     current_setting('application_name') || ' op ' || $1, true)";

/// The database the table lives in: the concrete store's pool.
#[derive(Clone, Debug)]
enum ConcreteStore {
    Sqlite(oprec::sqlite::SqliteStore),
    Postgres(oprec::postgres::PgStore),
}

/// The `demo_effects` table, reached through the concrete store's pool.
#[derive(Clone, Debug)]
pub(crate) struct EffectTable {
    store: ConcreteStore,
}

impl EffectTable {
    /// The table on `store`'s database.
    pub(crate) fn new(store: &AnyStore) -> Self {
        let store = match store {
            AnyStore::Sqlite(s) => ConcreteStore::Sqlite(s.clone()),
            AnyStore::Postgres(s) => ConcreteStore::Postgres(s.clone()),
            // This binary is built with both stores; a URL opens no other kind.
            other => unreachable!("a store this binary cannot open: {other:?}"),
        };
        EffectTable { store }
    }

    /// Whether the table is there (a catalog read, so a role without DDL rights may ask).
    async fn exists(&self) -> anyhow::Result<bool> {
        Ok(match &self.store {
            ConcreteStore::Sqlite(s) => sqlx::query_scalar::<_, i64>(
                "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'demo_effects'",
            )
            .fetch_one(s.pool())
            .await?
                > 0,
            ConcreteStore::Postgres(s) => {
                sqlx::query_scalar::<_, bool>("SELECT to_regclass('demo_effects') IS NOT NULL")
                    .fetch_one(s.pool())
                    .await?
            }
        })
    }

    /// Makes sure the table is there: `oprec migrate` creates it, so a worker running as a role
    /// without DDL rights only reads the catalog; a store migrated some other way (the
    /// library's `migrate`) gets it created here, when the role may.
    pub(crate) async fn ensure(&self) -> anyhow::Result<()> {
        if self.exists().await? {
            return Ok(());
        }
        self.create().await.map_err(|e| {
            e.context("the demo_effects table is missing and cannot be created: run `oprec migrate` as the schema's owner")
        })
    }

    /// Creates the table if it is missing (DDL: `oprec migrate` calls it).
    pub(crate) async fn create(&self) -> anyhow::Result<()> {
        match &self.store {
            ConcreteStore::Sqlite(s) => sqlx::query(CREATE).execute(s.pool()).await?,
            ConcreteStore::Postgres(s) => {
                // Two workers starting together may both try to create it: one wins, and the
                // other's error means the same: the relation (42P07) or its row type (42710)
                // "already exists", or a duplicate catalog row (23505).
                if let Err(e) = sqlx::query(CREATE).execute(s.pool()).await {
                    let exists = e.as_database_error().is_some_and(|d| {
                        matches!(d.code().as_deref(), Some("23505" | "42P07" | "42710"))
                    });
                    if !exists {
                        return Err(e.into());
                    }
                }
                return Ok(());
            }
        };
        Ok(())
    }

    /// Whether the effect for `key` exists.
    async fn has_effect(&self, key: &str) -> Result<bool, sqlx::Error> {
        let n: i64 = match &self.store {
            ConcreteStore::Sqlite(s) => {
                sqlx::query_scalar("SELECT count(*) FROM demo_effects WHERE effect_key = ?1")
                    .bind(key)
                    .fetch_one(s.pool())
                    .await?
            }
            ConcreteStore::Postgres(s) => {
                sqlx::query_scalar("SELECT count(*) FROM demo_effects WHERE effect_key = $1")
                    .bind(key)
                    .fetch_one(s.pool())
                    .await?
            }
        };
        Ok(n > 0)
    }

    /// Counts one call for `key` and makes the effect in the attempt's fenced transaction, then
    /// commits it with the attempt's success (after the pause after the effect, if any). A stale
    /// claim rolls both back and fails the attempt, whose outcome the fence has already written.
    async fn record_fenced(&self, ctx: &Context, pauses: &Pauses) -> anyhow::Result<()> {
        let key = ctx.effect_key();
        let now = Utc::now().to_rfc3339();
        let transient = |e: &dyn std::fmt::Display| {
            Failure::transient(format!(
                "could not record the effect (its transaction rolled back): {e}"
            ))
        };
        // The same steps on either store; only the transaction's type and the SQL differ.
        macro_rules! record_in {
            ($store:expr, $sql:expr $(, $name:expr)?) => {{
                let mut tx = ctx.fenced($store).await.map_err(|e| transient(&e))?;
                $(
                    sqlx::query($name)
                        .bind(ctx.id().to_string())
                        .execute(tx.conn())
                        .await
                        .map_err(|e| transient(&e))?;
                )?
                sqlx::query($sql)
                    .bind(key)
                    .bind(now)
                    .execute(tx.conn())
                    .await
                    .map_err(|e| transient(&e))?;
                pauses.pause(ctx.attempt(), pauses.sleep_after_ms).await;
                tx.set_remote_id(key);
                tx.commit().await?;
            }};
        }
        match &self.store {
            ConcreteStore::Sqlite(s) => record_in!(s, RECORD_SQLITE),
            ConcreteStore::Postgres(s) => record_in!(s, RECORD_POSTGRES, NAME_IN_SESSION),
        }
        Ok(())
    }

    /// Counts one call for `key`, creating the effect on the first.
    async fn record(&self, key: &str) -> Result<(), sqlx::Error> {
        let now = Utc::now().to_rfc3339();
        match &self.store {
            ConcreteStore::Sqlite(s) => {
                sqlx::query(RECORD_SQLITE)
                    .bind(key)
                    .bind(now)
                    .execute(s.pool())
                    .await?;
            }
            ConcreteStore::Postgres(s) => {
                sqlx::query(RECORD_POSTGRES)
                    .bind(key)
                    .bind(now)
                    .execute(s.pool())
                    .await?;
            }
        }
        Ok(())
    }
}

/// `demo.effect`'s payload: where the attempt pauses, if anywhere.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Pauses {
    sleep_before_ms: u64,
    sleep_after_ms: u64,
    sleep_attempts: Option<u32>,
    /// Make the effect in the attempt's fenced transaction.
    fenced: bool,
}

impl Pauses {
    /// Sleeps `ms` milliseconds if this attempt pauses.
    async fn pause(&self, attempt: u32, ms: u64) {
        if ms > 0 && self.sleep_attempts.is_none_or(|n| attempt <= n) {
            tokio::time::sleep(Duration::from_millis(ms)).await;
        }
    }
}

/// The kind.
pub(super) fn kind(policy: &RetryPolicy, table: EffectTable) -> Kind {
    let lookup = table.clone();
    Kind::new(
        "demo.effect",
        policy.clone(),
        move |ctx: Context, p: Pauses| {
            let table = table.clone();
            async move {
                p.pause(ctx.attempt(), p.sleep_before_ms).await;
                if p.fenced {
                    return table.record_fenced(&ctx, &p).await;
                }
                // The insert is atomic: when it fails, no effect happened, so a retry is safe.
                table
                    .record(ctx.effect_key())
                    .await
                    .map_err(|e| Failure::transient(format!("could not record the effect: {e}")))?;
                p.pause(ctx.attempt(), p.sleep_after_ms).await;
                ctx.set_remote_id(ctx.effect_key()).await.map_err(|e| {
                    Failure::transient(format!(
                        "could not record the remote id (the effect is keyed: a retry cannot \
                         repeat it): {e}"
                    ))
                })?;
                Ok(())
            }
        },
    )
    .reconcile(move |ctx: Context, _payload: serde_json::Value| {
        let table = lookup.clone();
        async move {
            match table.has_effect(ctx.effect_key()).await {
                Ok(true) => Reconciled::Applied {
                    remote_id: Some(ctx.effect_key().to_owned()),
                },
                Ok(false) => Reconciled::NotApplied,
                Err(_) => Reconciled::StillUnknown,
            }
        }
    })
    .dependency(DEPENDENCY)
}
