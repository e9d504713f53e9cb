//! Unknown outcomes ([`MaintenanceStore`](oprec_core::MaintenanceStore)): handing reconciling
//! operations to their kind's reconcile hook one reconciler at a time, and writing the
//! [`Settlement`](oprec_core::Settlement) core decided from a resolution.

use oprec_core::maintenance::{ReconcileDueParams, ReconcileResolveParams};
use oprec_core::{Error, Operation, Result, Status};

use crate::row::{self, millis};
use crate::{PgStore, backend_error, sql};

/// Takes reconciling operations due for their hook, pushing each one's next reconcile time by
/// the lease.
pub(crate) async fn operation_reconcile_due(
    store: &PgStore,
    params: ReconcileDueParams,
) -> Result<Vec<Operation>> {
    let rows = sqlx::query(sql::RECONCILE_DUE)
        .bind(store.now_bind())
        .bind(&params.kinds)
        .bind(i64::from(params.limit))
        .bind(millis(params.lease))
        .fetch_all(&store.pool)
        .await
        .map_err(backend_error)?;
    rows.iter().map(row::operation).collect()
}

/// Writes the settlement as it stands, if the operation is still reconciling; returns the new
/// status. [`Error::NotFound`] when there is no such operation, [`Error::InvalidInput`] when it is
/// not reconciling.
pub(crate) async fn operation_reconcile_resolve(
    store: &PgStore,
    params: ReconcileResolveParams,
) -> Result<Status> {
    let s = &params.settlement;
    let status: Option<String> = sqlx::query_scalar(sql::RECONCILE_RESOLVE)
        .bind(store.now_bind())
        .bind(params.id.as_uuid())
        .bind(s.status.as_str())
        .bind(s.terminal_reason.map(|r| r.as_str()))
        .bind(s.status.is_terminal())
        .bind(s.next_eligible_at)
        .bind(&s.remote_id)
        .bind(row::json(&s.last_error)?)
        .fetch_optional(&store.pool)
        .await
        .map_err(backend_error)?;
    if let Some(status) = status {
        return row::parse("status", &status);
    }
    let current: Option<String> = sqlx::query_scalar(sql::RECONCILE_STATUS)
        .bind(params.id.as_uuid())
        .fetch_optional(&store.pool)
        .await
        .map_err(backend_error)?;
    match current {
        None => Err(Error::NotFound(params.id)),
        Some(status) => Err(Error::InvalidInput(format!(
            "operation {} is {status}, not reconciling; nothing to resolve",
            params.id
        ))),
    }
}
