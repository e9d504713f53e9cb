//! Dead-letter announcements ([`MaintenanceStore`](oprec_core::MaintenanceStore)): promotions to
//! dead claimed by one announcer at a time, recorded as announced, or put off to a retry time
//! when the announcement failed, so every promotion is announced once in normal operation.

use oprec_core::maintenance::{AlertClaimParams, AlertDeferParams, AlertDue, MarkAlertedParams};
use oprec_core::{OperationId, Result};

use crate::row::{self, Columns, millis};
use crate::{PgStore, backend_error, sql};

/// See [`MaintenanceStore::operation_alert_claim`](oprec_core::MaintenanceStore::operation_alert_claim).
pub(crate) async fn operation_alert_claim(
    store: &PgStore,
    params: AlertClaimParams,
) -> Result<Vec<AlertDue>> {
    let rows = sqlx::query(sql::ALERTS_CLAIM)
        .bind(store.now_bind())
        .bind(i64::from(params.limit))
        .bind(millis(params.lease))
        .fetch_all(&store.pool)
        .await
        .map_err(backend_error)?;
    let mut due = rows
        .iter()
        .map(|r| {
            Ok(AlertDue {
                operation: row::operation(r)?,
                failures: Columns(r).count("alert_failures")?,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    // Oldest promotion first, as picked (RETURNING keeps no order).
    due.sort_by_key(|d| (d.operation.terminal_at, d.operation.id));
    Ok(due)
}

/// See [`MaintenanceStore::operation_mark_alerted`](oprec_core::MaintenanceStore::operation_mark_alerted).
pub(crate) async fn operation_mark_alerted(
    store: &PgStore,
    params: MarkAlertedParams,
) -> Result<()> {
    sqlx::query(sql::ALERTS_MARK_ALERTED)
        .bind(store.now_bind())
        .bind(row::uuids(&params.ids))
        .execute(&store.pool)
        .await
        .map_err(backend_error)?;
    Ok(())
}

/// See [`MaintenanceStore::operation_alert_defer`](oprec_core::MaintenanceStore::operation_alert_defer).
pub(crate) async fn operation_alert_defer(store: &PgStore, params: AlertDeferParams) -> Result<()> {
    let (ids, ats): (Vec<OperationId>, Vec<_>) = params.retries.into_iter().unzip();
    sqlx::query(sql::ALERTS_DEFER)
        .bind(row::uuids(&ids))
        .bind(ats)
        .execute(&store.pool)
        .await
        .map_err(backend_error)?;
    Ok(())
}
