//! Dead-letter announcements ([`MaintenanceStore`](oprec_core::MaintenanceStore)): promotions to
//! dead claimed by one announcer at a time (picked and taken under one write lock), recorded as
//! announced, or put off to a retry time when the announcement failed.

use chrono::Duration;
use oprec_core::OperationId;
use oprec_core::Result;
use oprec_core::alert::{
    AlertDueParams, AlertEntry, AlertHoldsParams, AlertListParams, AlertRecordParams,
    AlertSettleParams, AlertTrimParams,
};
use oprec_core::maintenance::{AlertClaimParams, AlertDeferParams, AlertDue, MarkAlertedParams};

use crate::row::{self, Columns, distinct_texts, json_text, uuid_text};
use crate::{SqliteStore, backend_error, sql, time};

/// See [`MaintenanceStore::operation_alert_claim`](oprec_core::MaintenanceStore::operation_alert_claim).
pub(crate) async fn operation_alert_claim(
    store: &SqliteStore,
    params: AlertClaimParams,
) -> Result<Vec<AlertDue>> {
    if params.limit == 0 {
        return Ok(Vec::new());
    }
    let now = store.clock_now();
    // The lease to the millisecond, as the PostgreSQL store takes it.
    let lease = Duration::milliseconds(params.lease.num_milliseconds());
    let until = time::text(time::after(now, lease)?)?;
    let mut tx = store.begin_write().await?;
    let ids: Vec<String> = sqlx::query_scalar(sql::ALERTS_CLAIM)
        .bind(time::text(now)?)
        .bind(i64::from(params.limit))
        .fetch_all(tx.conn())
        .await
        .map_err(backend_error)?;
    if ids.is_empty() {
        tx.commit().await?;
        return Ok(Vec::new());
    }
    let rows = sqlx::query(sql::ALERTS_TAKE)
        .bind(&until)
        .bind(json_text(&ids)?)
        .fetch_all(tx.conn())
        .await
        .map_err(backend_error)?;
    tx.commit().await?;
    let mut due = rows
        .iter()
        .map(|r| {
            Ok(AlertDue {
                operation: row::operation(r)?,
                failures: Columns(r).u32("alert_failures")?,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    // In the order picked: the oldest promotion first.
    due.sort_by_cached_key(|d| {
        ids.iter()
            .position(|id| *id == uuid_text(d.operation.id.as_uuid()))
    });
    Ok(due)
}

/// See [`MaintenanceStore::operation_mark_alerted`](oprec_core::MaintenanceStore::operation_mark_alerted).
pub(crate) async fn operation_mark_alerted(
    store: &SqliteStore,
    params: MarkAlertedParams,
) -> Result<()> {
    let ids = distinct_texts(&params.ids);
    if ids.is_empty() {
        return Ok(());
    }
    let now = time::text(store.clock_now())?;
    let _turn = store.write_turn().await;
    sqlx::query(sql::ALERTS_MARK_ALERTED)
        .bind(now)
        .bind(json_text(&ids)?)
        .execute(&store.pool)
        .await
        .map_err(backend_error)?;
    Ok(())
}

/// See [`MaintenanceStore::operation_alert_defer`](oprec_core::MaintenanceStore::operation_alert_defer).
pub(crate) async fn operation_alert_defer(
    store: &SqliteStore,
    params: AlertDeferParams,
) -> Result<()> {
    if params.retries.is_empty() {
        return Ok(());
    }
    let pairs = params
        .retries
        .iter()
        .map(|(id, at)| Ok((uuid_text(id.as_uuid()), time::text(*at)?)))
        .collect::<Result<Vec<_>>>()?;
    let _turn = store.write_turn().await;
    sqlx::query(sql::ALERTS_DEFER)
        .bind(json_text(&pairs)?)
        .execute(&store.pool)
        .await
        .map_err(backend_error)?;
    Ok(())
}

/// Reads one `alerts` row.
fn alert_entry(r: &sqlx::sqlite::SqliteRow) -> Result<AlertEntry> {
    let c = Columns(r);
    Ok(AlertEntry {
        id: c.int("id")?,
        event: c.parsed("event")?,
        subject: c.text("subject")?,
        operation_id: c
            .opt_parsed::<uuid::Uuid>("operation_id")?
            .map(OperationId::from_uuid),
        kind: c.opt_text("kind")?,
        dependency: c.opt_text("dependency")?,
        summary: c.text("summary")?,
        next_action: c.opt_text("next_action")?,
        route: c.opt_text("route")?,
        target: c.opt_text("target")?,
        status: c.parsed("status")?,
        tries: c.u32("tries")?,
        due_at: c.time("due_at")?,
        last_error: c.opt_text("last_error")?,
        source_at: c.time("source_at")?,
        created_at: c.time("created_at")?,
        sent_at: c.opt_time("sent_at")?,
    })
}

fn entries(rows: &[sqlx::sqlite::SqliteRow]) -> Result<Vec<AlertEntry>> {
    let mut out = rows.iter().map(alert_entry).collect::<Result<Vec<_>>>()?;
    // RETURNING keeps no order.
    out.sort_by_key(|e| e.id);
    Ok(out)
}

/// See [`MaintenanceStore::alert_record`](oprec_core::MaintenanceStore::alert_record).
pub(crate) async fn alert_record(
    store: &SqliteStore,
    params: AlertRecordParams,
) -> Result<Vec<AlertEntry>> {
    if params.alerts.is_empty() {
        return Ok(Vec::new());
    }
    let input = params
        .alerts
        .iter()
        .map(|a| {
            let d = a.delivery.as_ref();
            Ok(serde_json::json!({
                "event": a.event.as_str(),
                "subject": a.subject,
                "operation_id": a.operation_id.map(|i| uuid_text(i.as_uuid())),
                "kind": a.kind,
                "dependency": a.dependency,
                "summary": a.summary,
                "next_action": a.next_action,
                "source_at": time::text(a.source_at)?,
                "route": d.map(|d| d.route.as_str()),
                "target": d.and_then(|d| d.target.as_deref()),
                "error": d.and_then(|d| d.failure.as_ref().map(|f| f.0.as_str())),
                "retry_at": d
                    .and_then(|d| d.failure.as_ref().map(|f| time::text(f.1)))
                    .transpose()?,
            }))
        })
        .collect::<Result<Vec<_>>>()?;
    let now = time::text(store.clock_now())?;
    let _turn = store.write_turn().await;
    let rows = sqlx::query(sql::ALERTS_RECORD)
        .bind(now)
        .bind(json_text(&input)?)
        .fetch_all(&store.pool)
        .await
        .map_err(backend_error)?;
    entries(&rows)
}

/// See [`MaintenanceStore::alert_holds_record`](oprec_core::MaintenanceStore::alert_holds_record).
pub(crate) async fn alert_holds_record(
    store: &SqliteStore,
    params: AlertHoldsParams,
) -> Result<Vec<AlertEntry>> {
    let now = store.clock_now();
    let mut tx = store.begin_write().await?;
    let newest: Option<String> = sqlx::query_scalar(sql::ALERTS_HOLDS_SINCE)
        .fetch_one(tx.conn())
        .await
        .map_err(backend_error)?;
    let since = match newest {
        Some(t) => time::text(time::parse(&t)? - params.slack)?,
        None => String::new(),
    };
    let rows = sqlx::query(sql::ALERTS_HOLDS_RECORD)
        .bind(time::text(now)?)
        .bind(since)
        .bind(i64::from(params.limit))
        .fetch_all(tx.conn())
        .await
        .map_err(backend_error)?;
    tx.commit().await?;
    entries(&rows)
}

/// See [`MaintenanceStore::alert_due`](oprec_core::MaintenanceStore::alert_due).
pub(crate) async fn alert_due(
    store: &SqliteStore,
    params: AlertDueParams,
) -> Result<Vec<AlertEntry>> {
    if params.limit == 0 {
        return Ok(Vec::new());
    }
    let now = store.clock_now();
    let lease = Duration::milliseconds(params.lease.num_milliseconds());
    let _turn = store.write_turn().await;
    let rows = sqlx::query(sql::ALERTS_DUE)
        .bind(time::text(now)?)
        .bind(time::text(time::after(now, lease)?)?)
        .bind(i64::from(params.limit))
        .fetch_all(&store.pool)
        .await
        .map_err(backend_error)?;
    let mut due = entries(&rows)?;
    due.sort_by_key(|e| e.id);
    Ok(due)
}

/// See [`MaintenanceStore::alert_settle`](oprec_core::MaintenanceStore::alert_settle).
pub(crate) async fn alert_settle(store: &SqliteStore, params: AlertSettleParams) -> Result<()> {
    if params.results.is_empty() {
        return Ok(());
    }
    let input = params
        .results
        .iter()
        .map(|(id, d)| {
            Ok(serde_json::json!([
                id,
                d.route,
                d.target,
                d.failure.as_ref().map(|f| f.0.as_str()),
                d.failure.as_ref().map(|f| time::text(f.1)).transpose()?,
            ]))
        })
        .collect::<Result<Vec<_>>>()?;
    let now = time::text(store.clock_now())?;
    let _turn = store.write_turn().await;
    sqlx::query(sql::ALERTS_SETTLE)
        .bind(now)
        .bind(json_text(&input)?)
        .execute(&store.pool)
        .await
        .map_err(backend_error)?;
    Ok(())
}

/// See [`MaintenanceStore::alert_trim`](oprec_core::MaintenanceStore::alert_trim).
pub(crate) async fn alert_trim(store: &SqliteStore, params: AlertTrimParams) -> Result<u64> {
    let before = time::text(params.before)?;
    let _turn = store.write_turn().await;
    let done = sqlx::query(sql::ALERTS_TRIM)
        .bind(before)
        .bind(i64::from(params.limit))
        .execute(&store.pool)
        .await
        .map_err(backend_error)?;
    Ok(done.rows_affected())
}

/// See [`OperatorStore::alert_list`](oprec_core::OperatorStore::alert_list).
pub(crate) async fn alert_list(
    store: &SqliteStore,
    params: AlertListParams,
) -> Result<Vec<AlertEntry>> {
    let events: Vec<&str> = params.events.iter().map(|e| e.as_str()).collect();
    let statuses: Vec<&str> = params.statuses.iter().map(|s| s.as_str()).collect();
    let rows = sqlx::query(sql::ALERTS_LIST)
        .bind(json_text(&events)?)
        .bind(json_text(&statuses)?)
        .bind(params.kind)
        .bind(params.dependency)
        .bind(params.before_id)
        .bind(i64::from(params.limit))
        .fetch_all(&store.pool)
        .await
        .map_err(backend_error)?;
    rows.iter().map(alert_entry).collect()
}
