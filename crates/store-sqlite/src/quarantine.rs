//! Quarantine and release: pending operations set aside as held with core's
//! [`Ending::quarantined`] (who and why kept in their `last_error`), and held ones returned to
//! pending, eligible at once. Each is one statement over the operator's filter (built in
//! [`crate::filter`]), so atomic on its own.

use oprec_core::operator::{QuarantineParams, ReleaseParams};
use oprec_core::{Ending, Result};

use crate::{SqliteStore, backend_error, filter, time};

/// See [`OperatorStore::operation_quarantine`](oprec_core::OperatorStore::operation_quarantine).
pub(crate) async fn operation_quarantine(
    store: &SqliteStore,
    params: QuarantineParams,
) -> Result<u64> {
    let now = time::text(store.clock_now())?;
    let ending = Ending::quarantined(&params.actor, &params.reason);
    let mut q = filter::quarantine(&params.filter, &ending, &now, params.limit)?;
    let _turn = store.write_turn().await;
    let done = q
        .build()
        .execute(&store.pool)
        .await
        .map_err(backend_error)?;
    Ok(done.rows_affected())
}

/// See [`OperatorStore::operation_release`](oprec_core::OperatorStore::operation_release).
pub(crate) async fn operation_release(store: &SqliteStore, params: ReleaseParams) -> Result<u64> {
    let now = time::text(store.clock_now())?;
    let mut q = filter::release(&params.filter, &now, params.limit)?;
    let _turn = store.write_turn().await;
    let done = q
        .build()
        .execute(&store.pool)
        .await
        .map_err(backend_error)?;
    Ok(done.rows_affected())
}
