//! The rescuer's reads and the deadline pass ([`MaintenanceStore`](oprec_core::MaintenanceStore)):
//! listing expired claims for core to decide on (the decisions are applied by `complete`), and
//! ending waiting operations past their deadline with core's [`Ending::deadline_passed`].

use oprec_core::maintenance::{EndPastDeadlineParams, LeaseExpiredListParams};
use oprec_core::{Claimed, Ending, Result};

use crate::{PgStore, backend_error, row, sql};

/// Running operations whose lease expired, longest expired first, with their tokens.
pub(crate) async fn operation_lease_expired_list(
    store: &PgStore,
    params: LeaseExpiredListParams,
) -> Result<Vec<Claimed>> {
    let rows = sqlx::query(sql::RESCUE_LEASE_EXPIRED)
        .bind(store.now_bind())
        .bind(i64::from(params.limit))
        .fetch_all(&store.pool)
        .await
        .map_err(backend_error)?;
    rows.iter().map(row::claimed).collect()
}

/// Ends pending and held operations whose deadline passed; returns how many.
pub(crate) async fn operation_end_past_deadline(
    store: &PgStore,
    params: EndPastDeadlineParams,
) -> Result<u64> {
    let ending = Ending::deadline_passed();
    let done = sqlx::query(sql::RESCUE_END_PAST_DEADLINE)
        .bind(store.now_bind())
        .bind(i64::from(params.limit))
        .bind(ending.status.as_str())
        .bind(ending.terminal_reason.map(|r| r.as_str()))
        .bind(ending.status.is_terminal())
        .bind(&ending.patch.default_summary)
        .bind(&ending.patch.decision)
        .bind(&ending.patch.next_action)
        .execute(&store.pool)
        .await
        .map_err(backend_error)?;
    Ok(done.rows_affected())
}
