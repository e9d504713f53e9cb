//! The rescuer's reads and the deadline pass: running operations whose lease has expired, listed
//! with their tokens for core to decide on (the decisions are applied by [`crate::complete`]),
//! and waiting operations past their deadline ended as [`Ending::deadline_passed`] says.

use oprec_core::maintenance::{EndPastDeadlineParams, LeaseExpiredListParams};
use oprec_core::{Claimed, Ending, Result};

use crate::row;
use crate::{SqliteStore, backend_error, sql, time};

/// See [`MaintenanceStore::operation_lease_expired_list`](oprec_core::MaintenanceStore::operation_lease_expired_list).
/// A plain read: a claim that moves on after it is listed is caught by the apply's fence.
pub(crate) async fn operation_lease_expired_list(
    store: &SqliteStore,
    params: LeaseExpiredListParams,
) -> Result<Vec<Claimed>> {
    let rows = sqlx::query(sql::RESCUE_LEASE_EXPIRED)
        .bind(time::text(store.clock_now())?)
        .bind(i64::from(params.limit))
        .fetch_all(&store.pool)
        .await
        .map_err(backend_error)?;
    rows.iter()
        .map(|r| Claimed::from_operation(row::operation(r)?))
        .collect()
}

/// See [`MaintenanceStore::operation_end_past_deadline`](oprec_core::MaintenanceStore::operation_end_past_deadline).
pub(crate) async fn operation_end_past_deadline(
    store: &SqliteStore,
    params: EndPastDeadlineParams,
) -> Result<u64> {
    let now = time::text(store.clock_now())?;
    let ending = Ending::deadline_passed();
    let _turn = store.write_turn().await;
    let done = sqlx::query(sql::RESCUE_END_PAST_DEADLINE)
        .bind(&now)
        .bind(ending.status.as_str())
        .bind(ending.terminal_reason.map(|r| r.as_str()))
        .bind(ending.status.is_terminal().then_some(&now))
        .bind(&ending.patch.default_summary)
        .bind(&ending.patch.decision)
        .bind(&ending.patch.next_action)
        .bind(i64::from(params.limit))
        .execute(&store.pool)
        .await
        .map_err(backend_error)?;
    Ok(done.rows_affected())
}
