//! Dead-letter announcements ([`MaintenanceStore`](oprec_core::MaintenanceStore)): promotions to
//! dead claimed by one announcer at a time (picked and taken under one write lock), recorded as
//! announced, or put off to a retry time when the announcement failed.

use chrono::Duration;
use oprec_core::Result;
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
