//! What every caller reads ([`Store`](oprec_core::Store)): the schema, the store's "now", one
//! operation with its history, listings and counts.

use chrono::{DateTime, Utc};
use oprec_core::store::{CountRow, ListParams, OperationGetParams};
use oprec_core::{Error, Operation, OperationDetail, Result};

use sqlx::migrate::Migrator;
use sqlx::{Connection, PgConnection};

use crate::row::{self, Columns};
use crate::{MIGRATOR, PgStore, backend_error, filter, sql};

/// The advisory lock that lets one `migrate` at a time into a database. Not sqlx's own key on
/// purpose: see [`migrate`].
const MIGRATION_LOCK: i64 = 0x6f70_7265_635f_6d67; // "oprec_mg"

/// Creates or upgrades the schema with the embedded migrations, one migrator at a time per
/// database.
///
/// The lock is taken by trying, not by waiting, and it is oprec's own rather than sqlx's: a
/// migration that builds an index concurrently waits for every transaction in the database that
/// is older than it, and a migrator blocked inside `pg_advisory_lock` is one, waiting in turn for
/// the lock: a deadlock PostgreSQL cannot see. A migrator that tries, sleeps and tries again
/// holds no statement open for long, and a `sqlx migrate run` (or an older oprec) blocking on
/// sqlx's key is not waiting for this one.
pub(crate) async fn migrate(store: &PgStore) -> Result<()> {
    // A session of its own, outside the pool (which may hold a single connection): it only holds
    // the lock, outside any transaction, and ending it releases the lock whatever happened.
    let mut lock = PgConnection::connect_with(&store.pool.connect_options())
        .await
        .map_err(backend_error)?;
    while !sqlx::query_scalar::<_, bool>("SELECT pg_try_advisory_lock($1)")
        .bind(MIGRATION_LOCK)
        .fetch_one(&mut lock)
        .await
        .map_err(backend_error)?
    {
        sqlx::query("SELECT pg_sleep(0.05)")
            .execute(&mut lock)
            .await
            .map_err(backend_error)?;
    }
    let mut migrator = Migrator::with_migrations(MIGRATOR.migrations.to_vec());
    migrator.set_locking(false);
    let ran = migrator.run(&store.pool).await;
    // Closing the session releases its lock.
    let closed = lock.close().await;
    ran.map_err(|e| Error::backend(false, e))?;
    closed.map_err(backend_error)
}

/// The store's clock, or with the system clock the database's, so that every host judges
/// eligibility and leases by one clock.
pub(crate) async fn now(store: &PgStore) -> Result<DateTime<Utc>> {
    match store.now_bind() {
        Some(now) => Ok(now),
        None => sqlx::query_scalar("SELECT now()")
            .fetch_one(&store.pool)
            .await
            .map_err(backend_error),
    }
}

/// One operation with its attempt history, oldest first.
pub(crate) async fn operation_get(
    store: &PgStore,
    params: OperationGetParams,
) -> Result<Option<OperationDetail>> {
    let id = params.id.as_uuid();
    let Some(op) = sqlx::query(sql::READ_OPERATION)
        .bind(id)
        .fetch_optional(&store.pool)
        .await
        .map_err(backend_error)?
    else {
        return Ok(None);
    };
    let attempts = sqlx::query(sql::READ_ATTEMPTS)
        .bind(id)
        .fetch_all(&store.pool)
        .await
        .map_err(backend_error)?;
    Ok(Some(OperationDetail {
        operation: row::operation(&op)?,
        attempts: attempts.iter().map(row::attempt).collect::<Result<_>>()?,
    }))
}

/// Operations matching the listing's filters, one keyset page.
pub(crate) async fn operation_list(store: &PgStore, params: ListParams) -> Result<Vec<Operation>> {
    let mut query = filter::list_query(params);
    let rows = query
        .build()
        .fetch_all(&store.pool)
        .await
        .map_err(backend_error)?;
    rows.iter().map(row::operation).collect()
}

/// Operations counted by status, kind and last failure class.
pub(crate) async fn operation_count(store: &PgStore) -> Result<Vec<CountRow>> {
    let rows = sqlx::query(sql::READ_COUNT)
        .fetch_all(&store.pool)
        .await
        .map_err(backend_error)?;
    rows.iter()
        .map(|r| {
            let c = Columns(r);
            Ok(CountRow {
                status: c.parsed("status")?,
                kind: c.get("kind")?,
                failure_class: c.opt_parsed("last_failure_class")?,
                count: c.big_count("count")?,
            })
        })
        .collect()
}
