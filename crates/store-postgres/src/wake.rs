//! The scheduler's pick ([`MaintenanceStore`](oprec_core::MaintenanceStore)): due operations,
//! marked woken in the same statement, for publishing. Only one scheduler per schema picks at a
//! time (a transaction-level advisory lock), so several scheduler processes do not multiply
//! wake-ups; the others find the lock taken and pick nothing this round.

use oprec_core::maintenance::{
    KindWakeFigures, RewakeParams, WakeDueParams, WakeFiguresParams, WakeResetParams,
};
use oprec_core::{OperationId, Result, WakeUp};
use uuid::Uuid;

use crate::row::{self, micros, millis};
use crate::{PgStore, backend_error, sql};

/// Marks due operations woken and returns them with their kinds, oldest eligible first; nothing when another
/// scheduler leads.
pub(crate) async fn operation_wake_due(
    store: &PgStore,
    params: WakeDueParams,
) -> Result<Vec<WakeUp>> {
    let mut tx = store.begin_with(sql::WALK_PENDING_IN_ORDER).await?;
    let leader: bool = sqlx::query_scalar(sql::WAKE_LEADER)
        .fetch_one(&mut *tx)
        .await
        .map_err(backend_error)?;
    if !leader {
        return Ok(Vec::new());
    }
    let due: Vec<(Uuid, String)> = sqlx::query_as(sql::WAKE_DUE.as_str())
        .bind(store.now_bind())
        .bind(millis(params.rewake_after))
        .bind(i64::from(params.limit))
        .bind(params.stale)
        .bind(params.handled_within.map(micros))
        .fetch_all(&mut *tx)
        .await
        .map_err(backend_error)?;
    tx.commit().await.map_err(backend_error)?;
    Ok(wake_ups(due))
}

/// See [`MaintenanceStore::operation_wake_reset`](oprec_core::MaintenanceStore::operation_wake_reset).
pub(crate) async fn operation_wake_reset(store: &PgStore, params: WakeResetParams) -> Result<u64> {
    let done = sqlx::query(sql::OPERATIONS_WAKE_RESET)
        .bind(&params.kinds)
        .bind(row::uuids(&params.ids))
        .execute(&store.pool)
        .await
        .map_err(backend_error)?;
    Ok(done.rows_affected())
}

/// See [`MaintenanceStore::operation_rewake`](oprec_core::MaintenanceStore::operation_rewake).
pub(crate) async fn operation_rewake(store: &PgStore, params: RewakeParams) -> Result<Vec<WakeUp>> {
    let mut tx = store.begin_with(sql::WALK_PENDING_IN_ORDER).await?;
    let due: Vec<(Uuid, String)> = sqlx::query_as(sql::WAKE_REWAKE.as_str())
        .bind(store.now_bind())
        .bind(millis(params.rewake_after))
        .bind(i64::from(params.limit))
        .bind(&params.kind)
        .fetch_all(&mut *tx)
        .await
        .map_err(backend_error)?;
    tx.commit().await.map_err(backend_error)?;
    Ok(wake_ups(due))
}

/// See [`MaintenanceStore::operation_wake_figures`](oprec_core::MaintenanceStore::operation_wake_figures).
pub(crate) async fn operation_wake_figures(
    store: &PgStore,
    params: WakeFiguresParams,
) -> Result<Vec<KindWakeFigures>> {
    let rows = sqlx::query(sql::WAKE_FIGURES.as_str())
        .bind(store.now_bind())
        .bind(millis(params.rewake_after))
        .bind(micros(params.handled_within))
        .fetch_all(&store.pool)
        .await
        .map_err(backend_error)?;
    rows.iter()
        .map(|r| {
            let c = row::Columns(r);
            Ok(KindWakeFigures {
                kind: c.get("kind")?,
                signalled: c.big_count("signalled")?,
                stale: c.big_count("stale")?,
                handled: c.get("handled")?,
            })
        })
        .collect()
}

/// The rows a pick returned (id, kind), as wake-ups to publish.
fn wake_ups(rows: Vec<(Uuid, String)>) -> Vec<WakeUp> {
    rows.into_iter()
        .map(|(id, kind)| WakeUp::new(OperationId::from_uuid(id), kind))
        .collect()
}
