//! The `workers` table ([`WorkerStore`](oprec_core::WorkerStore) and
//! [`OperatorStore`](oprec_core::OperatorStore)): running workers' heartbeats, and the pending
//! operations of kinds that no live worker handles (which would otherwise wait unseen).

use oprec_core::operator::WorkerListParams;
use oprec_core::store::WorkerRemoveParams;
use oprec_core::{Result, UNHANDLED_READ_MAX, UnhandledKind, WorkerBeatParams, WorkerRecord};

use crate::row::{Columns, micros};
use crate::{PgStore, backend_error, sql};

/// Registers a worker, or refreshes its row; its kinds are kept sorted, each once.
pub(crate) async fn worker_beat(store: &PgStore, params: WorkerBeatParams) -> Result<()> {
    let mut kinds = params.kinds;
    kinds.sort();
    kinds.dedup();
    sqlx::query(sql::WORKERS_BEAT)
        .bind(store.now_bind())
        .bind(&params.id)
        .bind(&params.host)
        .bind(i64::from(params.pid))
        .bind(kinds)
        .bind(&params.code_version)
        .bind(params.started_at)
        .execute(&store.pool)
        .await
        .map_err(backend_error)?;
    Ok(())
}

/// Removes a worker's row; false when there was none.
pub(crate) async fn worker_remove(store: &PgStore, params: WorkerRemoveParams) -> Result<bool> {
    let done = sqlx::query(sql::WORKERS_REMOVE)
        .bind(&params.id)
        .execute(&store.pool)
        .await
        .map_err(backend_error)?;
    Ok(done.rows_affected() > 0)
}

/// The workers seen lately, by id.
pub(crate) async fn worker_list(
    store: &PgStore,
    params: WorkerListParams,
) -> Result<Vec<WorkerRecord>> {
    let rows = sqlx::query(sql::WORKERS_LIST)
        .bind(store.now_bind())
        .bind(micros(params.seen_within))
        .fetch_all(&store.pool)
        .await
        .map_err(backend_error)?;
    rows.iter()
        .map(|r| {
            let c = Columns(r);
            Ok(WorkerRecord {
                id: c.get("id")?,
                host: c.get("host")?,
                pid: c.big_count("pid")?,
                kinds: c.get("kinds")?,
                code_version: c.get("code_version")?,
                started_at: c.get("started_at")?,
                last_seen_at: c.get("last_seen_at")?,
                leader: c.get("leader")?,
            })
        })
        .collect()
}

/// Pending operations, per kind, that no worker seen lately handles.
pub(crate) async fn operation_unhandled(
    store: &PgStore,
    params: WorkerListParams,
) -> Result<Vec<UnhandledKind>> {
    // The stats' planner settings: without statistics the planner would read every pending
    // row and sort them by kind, as this statement once did (0.7-1.5 s at 300,000 pending).
    let mut tx = store.pool.begin().await.map_err(backend_error)?;
    sqlx::raw_sql(sql::STATS_INDEXES_ONLY)
        .execute(&mut *tx)
        .await
        .map_err(backend_error)?;
    let rows = sqlx::query(sql::WORKERS_UNHANDLED)
        .bind(store.now_bind())
        .bind(micros(params.seen_within))
        .bind(i64::try_from(UNHANDLED_READ_MAX).unwrap_or(i64::MAX))
        .fetch_all(&mut *tx)
        .await
        .map_err(backend_error)?;
    tx.commit().await.map_err(backend_error)?;
    rows.iter()
        .map(|r| {
            let c = Columns(r);
            let (pending, scanned): (u64, u64) = (c.big_count("pending")?, c.big_count("scanned")?);
            Ok(UnhandledKind {
                kind: c.get("kind")?,
                pending: pending.max(scanned),
                eligible: c.big_count("eligible")?,
                eligible_at_least: pending > scanned,
                oldest_created_at: c.get("oldest_created_at")?,
            })
        })
        .collect()
}
