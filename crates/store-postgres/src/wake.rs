//! The scheduler's pick ([`MaintenanceStore`](oprec_core::MaintenanceStore)): due operations,
//! marked woken in the same statement, for publishing. Only one scheduler per schema picks at a
//! time (a transaction-level advisory lock), so several scheduler processes do not multiply
//! wake-ups; the others find the lock taken and pick nothing this round.

use oprec_core::maintenance::{WakeDueParams, WakeResetParams};
use oprec_core::{OperationId, Result};
use uuid::Uuid;

use crate::row::{self, millis};
use crate::{PgStore, backend_error, sql};

/// Marks due operations woken and returns them, oldest eligible first; nothing when another
/// scheduler leads.
pub(crate) async fn operation_wake_due(
    store: &PgStore,
    params: WakeDueParams,
) -> Result<Vec<OperationId>> {
    let mut tx = store
        .pool
        .begin_with(sql::WALK_PENDING_IN_ORDER)
        .await
        .map_err(backend_error)?;
    let leader: bool = sqlx::query_scalar(sql::WAKE_LEADER)
        .fetch_one(&mut *tx)
        .await
        .map_err(backend_error)?;
    if !leader {
        return Ok(Vec::new());
    }
    let ids: Vec<Uuid> = sqlx::query_scalar(sql::WAKE_DUE.as_str())
        .bind(store.now_bind())
        .bind(millis(params.rewake_after))
        .bind(i64::from(params.limit))
        .fetch_all(&mut *tx)
        .await
        .map_err(backend_error)?;
    tx.commit().await.map_err(backend_error)?;
    Ok(ids.into_iter().map(OperationId::from_uuid).collect())
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
