//! Dead-letter alerts: promotions to dead not yet announced to their sink, and the record that
//! they were.

use oprec_core::maintenance::{DeadUnalertedParams, MarkAlertedParams};
use oprec_core::{Operation, Result};

use crate::row::{self, distinct_texts, json_text};
use crate::{SqliteStore, backend_error, sql, time};

/// See [`MaintenanceStore::operation_dead_unalerted`](oprec_core::MaintenanceStore::operation_dead_unalerted).
pub(crate) async fn operation_dead_unalerted(
    store: &SqliteStore,
    params: DeadUnalertedParams,
) -> Result<Vec<Operation>> {
    let rows = sqlx::query(sql::ALERTS_DEAD_UNALERTED)
        .bind(i64::from(params.limit))
        .fetch_all(&store.pool)
        .await
        .map_err(backend_error)?;
    rows.iter().map(row::operation).collect()
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
