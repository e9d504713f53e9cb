//! The `workers` table: running workers' heartbeats, and the pending operations of kinds that no
//! live worker handles.

use chrono::Duration;
use oprec_core::operator::WorkerListParams;
use oprec_core::store::WorkerRemoveParams;
use oprec_core::{Result, UNHANDLED_READ_MAX, UnhandledKind, WorkerBeatParams, WorkerRecord};

use crate::row::{self, json_text};
use crate::{SqliteStore, backend_error, sql, time};

/// See [`WorkerStore::worker_beat`](oprec_core::WorkerStore::worker_beat).
pub(crate) async fn worker_beat(store: &SqliteStore, params: WorkerBeatParams) -> Result<()> {
    let now = time::text(store.clock_now())?;
    let mut kinds = params.kinds;
    kinds.sort();
    kinds.dedup();
    let _turn = store.write_turn().await;
    sqlx::query(sql::WORKERS_BEAT)
        .bind(&params.id)
        .bind(&params.host)
        .bind(i64::from(params.pid))
        .bind(json_text(&kinds)?)
        .bind(&params.code_version)
        .bind(time::text(time::truncate(params.started_at))?)
        .bind(now)
        .execute(&store.pool)
        .await
        .map_err(backend_error)?;
    Ok(())
}

/// See [`WorkerStore::worker_remove`](oprec_core::WorkerStore::worker_remove).
pub(crate) async fn worker_remove(store: &SqliteStore, params: WorkerRemoveParams) -> Result<bool> {
    let _turn = store.write_turn().await;
    let done = sqlx::query(sql::WORKERS_REMOVE)
        .bind(&params.id)
        .execute(&store.pool)
        .await
        .map_err(backend_error)?;
    Ok(done.rows_affected() > 0)
}

/// The stored text of now − `seen_within`: rows seen at or after it are live.
fn live_since(store: &SqliteStore, seen_within: Duration) -> Result<String> {
    time::after(store.clock_now(), -seen_within).and_then(time::text)
}

/// See [`OperatorStore::worker_list`](oprec_core::OperatorStore::worker_list).
pub(crate) async fn worker_list(
    store: &SqliteStore,
    params: WorkerListParams,
) -> Result<Vec<WorkerRecord>> {
    let rows = sqlx::query(sql::WORKERS_LIST)
        .bind(live_since(store, params.seen_within)?)
        .bind(time::text(store.clock_now())?)
        .fetch_all(&store.pool)
        .await
        .map_err(backend_error)?;
    rows.iter().map(row::worker_record).collect()
}

/// See [`OperatorStore::operation_unhandled`](oprec_core::OperatorStore::operation_unhandled).
pub(crate) async fn operation_unhandled(
    store: &SqliteStore,
    params: WorkerListParams,
) -> Result<Vec<UnhandledKind>> {
    let rows = sqlx::query(sql::WORKERS_UNHANDLED)
        .bind(time::text(store.clock_now())?)
        .bind(live_since(store, params.seen_within)?)
        .bind(i64::try_from(UNHANDLED_READ_MAX).unwrap_or(i64::MAX))
        .fetch_all(&store.pool)
        .await
        .map_err(backend_error)?;
    rows.iter().map(row::unhandled_kind).collect()
}
