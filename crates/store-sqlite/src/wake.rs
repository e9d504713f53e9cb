//! The scheduler's pick: due operations are marked woken and returned by one statement, so two
//! schedulers never publish the same operation from one call each. Operations a control holds
//! back are not due.

use oprec_core::maintenance::WakeDueParams;
use oprec_core::{Result, WakeUp};

use crate::row::parse_id;
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
        .fetch_all(&store.pool)
        .await
        .map_err(backend_error)?;
    due.into_iter()
        .map(|(id, kind)| Ok(WakeUp::new(parse_id(&id)?, kind)))
        .collect()
}
