//! The schema, the store's "now", and reading operations back for people and tools: one with its
//! history, filtered pages (built in [`crate::filter`], their shape depending on the filters
//! given), and counts.

use chrono::{DateTime, Utc};
use oprec_core::store::{CountRow, ListParams, OperationGetParams};
use oprec_core::{Error, Operation, OperationDetail, Result};

use crate::row::{self, uuid_text};
use crate::{MIGRATOR, SqliteStore, backend_error, filter, sql};

/// Creates or upgrades the schema with [`MIGRATOR`].
pub(crate) async fn migrate(store: &SqliteStore) -> Result<()> {
    MIGRATOR
        .run(&store.pool)
        .await
        .map_err(|e| Error::backend(false, e))
}

/// The store's "now": its clock's, never SQLite's.
pub(crate) async fn now(store: &SqliteStore) -> Result<DateTime<Utc>> {
    Ok(store.clock_now())
}

/// See [`Store::operation_get`](oprec_core::Store::operation_get).
pub(crate) async fn operation_get(
    store: &SqliteStore,
    params: OperationGetParams,
) -> Result<Option<OperationDetail>> {
    let id = uuid_text(params.id.as_uuid());
    // One read transaction, so the record and its history are from the same moment.
    let mut tx = store.pool.begin().await.map_err(backend_error)?;
    let Some(op) = sqlx::query(sql::READ_OPERATION)
        .bind(&id)
        .fetch_optional(&mut *tx)
        .await
        .map_err(backend_error)?
    else {
        return Ok(None);
    };
    let attempts = sqlx::query(sql::READ_ATTEMPTS)
        .bind(&id)
        .fetch_all(&mut *tx)
        .await
        .map_err(backend_error)?;
    tx.commit().await.map_err(backend_error)?;
    Ok(Some(OperationDetail {
        operation: row::operation(&op)?,
        attempts: attempts.iter().map(row::attempt).collect::<Result<_>>()?,
    }))
}

/// See [`Store::operation_list`](oprec_core::Store::operation_list).
pub(crate) async fn operation_list(
    store: &SqliteStore,
    params: ListParams,
) -> Result<Vec<Operation>> {
    let rows = filter::list(&params)?
        .build()
        .fetch_all(&store.pool)
        .await
        .map_err(backend_error)?;
    rows.iter().map(row::operation).collect()
}

/// See [`Store::operation_count`](oprec_core::Store::operation_count).
pub(crate) async fn operation_count(store: &SqliteStore) -> Result<Vec<CountRow>> {
    let rows = sqlx::query(sql::READ_COUNT)
        .fetch_all(&store.pool)
        .await
        .map_err(backend_error)?;
    rows.iter().map(row::count_row).collect()
}
