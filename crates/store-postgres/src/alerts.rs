//! Dead-letter announcements ([`MaintenanceStore`](oprec_core::MaintenanceStore)): promotions to
//! dead claimed by one announcer at a time, recorded as announced, or put off to a retry time
//! when the announcement failed, so every promotion is announced once in normal operation.

use oprec_core::alert::{
    AlertDueParams, AlertEntry, AlertHoldsParams, AlertListParams, AlertRecordParams,
    AlertSettleParams, AlertTrimParams,
};
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

/// Reads one `alerts` row.
fn alert_entry(r: &sqlx::postgres::PgRow) -> Result<AlertEntry> {
    let c = Columns(r);
    Ok(AlertEntry {
        id: c.get("id")?,
        event: c.parsed("event")?,
        subject: c.get("subject")?,
        operation_id: c
            .get::<Option<uuid::Uuid>>("operation_id")?
            .map(OperationId::from_uuid),
        kind: c.get("kind")?,
        dependency: c.get("dependency")?,
        summary: c.get("summary")?,
        next_action: c.get("next_action")?,
        route: c.get("route")?,
        target: c.get("target")?,
        status: c.parsed("status")?,
        tries: c.count("tries")?,
        due_at: c.get("due_at")?,
        last_error: c.get("last_error")?,
        source_at: c.get("source_at")?,
        created_at: c.get("created_at")?,
        sent_at: c.get("sent_at")?,
    })
}

fn entries(rows: &[sqlx::postgres::PgRow]) -> Result<Vec<AlertEntry>> {
    let mut out = rows.iter().map(alert_entry).collect::<Result<Vec<_>>>()?;
    // RETURNING keeps no order.
    out.sort_by_key(|e| e.id);
    Ok(out)
}

/// See [`MaintenanceStore::alert_record`](oprec_core::MaintenanceStore::alert_record).
pub(crate) async fn alert_record(
    store: &PgStore,
    params: AlertRecordParams,
) -> Result<Vec<AlertEntry>> {
    if params.alerts.is_empty() {
        return Ok(Vec::new());
    }
    let a = &params.alerts;
    let rows = sqlx::query(sql::ALERTS_RECORD)
        .bind(store.now_bind())
        .bind(a.iter().map(|x| x.event.as_str()).collect::<Vec<_>>())
        .bind(a.iter().map(|x| x.subject.as_str()).collect::<Vec<_>>())
        .bind(
            a.iter()
                .map(|x| x.operation_id.map(|i| *i.as_uuid()))
                .collect::<Vec<_>>(),
        )
        .bind(a.iter().map(|x| x.kind.as_deref()).collect::<Vec<_>>())
        .bind(
            a.iter()
                .map(|x| x.dependency.as_deref())
                .collect::<Vec<_>>(),
        )
        .bind(a.iter().map(|x| x.summary.as_str()).collect::<Vec<_>>())
        .bind(
            a.iter()
                .map(|x| x.next_action.as_deref())
                .collect::<Vec<_>>(),
        )
        .bind(a.iter().map(|x| x.source_at).collect::<Vec<_>>())
        .bind(
            a.iter()
                .map(|x| x.delivery.as_ref().and_then(|d| d.target.as_deref()))
                .collect::<Vec<_>>(),
        )
        .bind(
            a.iter()
                .map(|x| x.delivery.as_ref().map(|d| d.route.as_str()))
                .collect::<Vec<_>>(),
        )
        .bind(
            a.iter()
                .map(|x| {
                    x.delivery
                        .as_ref()
                        .and_then(|d| d.failure.as_ref().map(|f| f.0.as_str()))
                })
                .collect::<Vec<_>>(),
        )
        .bind(
            a.iter()
                .map(|x| {
                    x.delivery
                        .as_ref()
                        .and_then(|d| d.failure.as_ref().map(|f| f.1))
                })
                .collect::<Vec<_>>(),
        )
        .fetch_all(&store.pool)
        .await
        .map_err(backend_error)?;
    entries(&rows)
}

/// See [`MaintenanceStore::alert_holds_record`](oprec_core::MaintenanceStore::alert_holds_record).
pub(crate) async fn alert_holds_record(
    store: &PgStore,
    params: AlertHoldsParams,
) -> Result<Vec<AlertEntry>> {
    let rows = sqlx::query(sql::ALERTS_HOLDS_RECORD)
        .bind(store.now_bind())
        .bind(millis(params.slack))
        .bind(i64::from(params.limit))
        .fetch_all(&store.pool)
        .await
        .map_err(backend_error)?;
    entries(&rows)
}

/// See [`MaintenanceStore::alert_due`](oprec_core::MaintenanceStore::alert_due).
pub(crate) async fn alert_due(store: &PgStore, params: AlertDueParams) -> Result<Vec<AlertEntry>> {
    let rows = sqlx::query(sql::ALERTS_DUE)
        .bind(store.now_bind())
        .bind(i64::from(params.limit))
        .bind(millis(params.lease))
        .fetch_all(&store.pool)
        .await
        .map_err(backend_error)?;
    let mut due = entries(&rows)?;
    due.sort_by_key(|e| (e.due_at, e.id));
    Ok(due)
}

/// See [`MaintenanceStore::alert_settle`](oprec_core::MaintenanceStore::alert_settle).
pub(crate) async fn alert_settle(store: &PgStore, params: AlertSettleParams) -> Result<()> {
    let r = &params.results;
    sqlx::query(sql::ALERTS_SETTLE)
        .bind(store.now_bind())
        .bind(r.iter().map(|(id, _)| *id).collect::<Vec<_>>())
        .bind(r.iter().map(|(_, d)| d.route.as_str()).collect::<Vec<_>>())
        .bind(
            r.iter()
                .map(|(_, d)| d.target.as_deref())
                .collect::<Vec<_>>(),
        )
        .bind(
            r.iter()
                .map(|(_, d)| d.failure.as_ref().map(|f| f.0.as_str()))
                .collect::<Vec<_>>(),
        )
        .bind(
            r.iter()
                .map(|(_, d)| d.failure.as_ref().map(|f| f.1))
                .collect::<Vec<_>>(),
        )
        .execute(&store.pool)
        .await
        .map_err(backend_error)?;
    Ok(())
}

/// See [`MaintenanceStore::alert_trim`](oprec_core::MaintenanceStore::alert_trim).
pub(crate) async fn alert_trim(store: &PgStore, params: AlertTrimParams) -> Result<u64> {
    let done = sqlx::query(sql::ALERTS_TRIM)
        .bind(params.before)
        .bind(i64::from(params.limit))
        .execute(&store.pool)
        .await
        .map_err(backend_error)?;
    Ok(done.rows_affected())
}

/// See [`OperatorStore::alert_list`](oprec_core::OperatorStore::alert_list).
pub(crate) async fn alert_list(
    store: &PgStore,
    params: AlertListParams,
) -> Result<Vec<AlertEntry>> {
    let rows = sqlx::query(sql::ALERTS_LIST)
        .bind(params.events.iter().map(|e| e.as_str()).collect::<Vec<_>>())
        .bind(
            params
                .statuses
                .iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>(),
        )
        .bind(params.kind)
        .bind(params.dependency)
        .bind(params.before_id)
        .bind(i64::from(params.limit))
        .fetch_all(&store.pool)
        .await
        .map_err(backend_error)?;
    rows.iter().map(alert_entry).collect()
}
