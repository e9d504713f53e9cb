//! The scheduler's pick: due operations are marked woken and returned by one statement, so two
//! schedulers never publish the same operation from one call each. Operations a control holds
//! back are not due.

use oprec_core::maintenance::{
    KindWakeFigures, RewakeParams, WakeDueParams, WakeFiguresParams, WakeResetParams,
};
use oprec_core::{Result, WakeUp};

use crate::row::{self, parse_id};
use crate::{SqliteStore, backend_error, sql, time};

/// See [`MaintenanceStore::operation_wake_due`](oprec_core::MaintenanceStore::operation_wake_due).
pub(crate) async fn operation_wake_due(
    store: &SqliteStore,
    params: WakeDueParams,
) -> Result<Vec<WakeUp>> {
    let now = store.clock_now();
    let stale_before = time::after(now, -params.rewake_after)?;
    let _turn = store.write_turn().await;
    let due: Vec<(String, String)> = sqlx::query_as(sql::WAKE_DUE.as_str())
        .bind(time::text(now)?)
        .bind(time::text(stale_before)?)
        .bind(i64::from(params.limit))
        .bind(params.stale)
        .bind(
            params
                .handled_within
                .map(|d| time::after(now, -d).and_then(time::text))
                .transpose()?,
        )
        .fetch_all(&store.pool)
        .await
        .map_err(backend_error)?;
    wake_ups(due)
}

/// See [`MaintenanceStore::operation_wake_reset`](oprec_core::MaintenanceStore::operation_wake_reset).
pub(crate) async fn operation_wake_reset(
    store: &SqliteStore,
    params: WakeResetParams,
) -> Result<u64> {
    let kinds = row::json_text(&params.kinds)?;
    let ids = row::json_text(&row::distinct_texts(&params.ids))?;
    let _turn = store.write_turn().await;
    let done = sqlx::query(sql::OPERATIONS_WAKE_RESET)
        .bind(kinds)
        .bind(ids)
        .execute(&store.pool)
        .await
        .map_err(backend_error)?;
    Ok(done.rows_affected())
}

/// See [`MaintenanceStore::operation_rewake`](oprec_core::MaintenanceStore::operation_rewake).
pub(crate) async fn operation_rewake(
    store: &SqliteStore,
    params: RewakeParams,
) -> Result<Vec<WakeUp>> {
    let now = store.clock_now();
    let stale_before = time::after(now, -params.rewake_after)?;
    let _turn = store.write_turn().await;
    let due: Vec<(String, String)> = sqlx::query_as(sql::WAKE_REWAKE.as_str())
        .bind(time::text(now)?)
        .bind(time::text(stale_before)?)
        .bind(i64::from(params.limit))
        .bind(&params.kind)
        .fetch_all(&store.pool)
        .await
        .map_err(backend_error)?;
    wake_ups(due)
}

/// See [`MaintenanceStore::operation_wake_figures`](oprec_core::MaintenanceStore::operation_wake_figures).
pub(crate) async fn operation_wake_figures(
    store: &SqliteStore,
    params: WakeFiguresParams,
) -> Result<Vec<KindWakeFigures>> {
    let now = store.clock_now();
    let rows = sqlx::query(sql::WAKE_FIGURES.as_str())
        .bind(time::text(now)?)
        .bind(time::text(time::after(now, -params.rewake_after)?)?)
        .bind(time::text(time::after(now, -params.handled_within)?)?)
        .fetch_all(&store.pool)
        .await
        .map_err(backend_error)?;
    rows.iter()
        .map(|r| {
            let c = row::Columns(r);
            Ok(KindWakeFigures {
                kind: c.text("kind")?,
                signalled: c.u64("signalled")?,
                stale: c.u64("stale")?,
                handled: c.flag("handled")?,
            })
        })
        .collect()
}

/// The rows a pick returned (id, kind), as wake-ups to publish.
fn wake_ups(rows: Vec<(String, String)>) -> Result<Vec<WakeUp>> {
    rows.into_iter()
        .map(|(id, kind)| Ok(WakeUp::new(parse_id(&id)?, kind)))
        .collect()
}
