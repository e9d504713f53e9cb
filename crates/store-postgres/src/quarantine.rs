//! Setting pending operations aside and letting them go again
//! ([`OperatorStore`](oprec_core::OperatorStore)): a quarantine writes core's
//! [`Ending::quarantined`] (held, saying who and why); a release makes held operations pending
//! and eligible at once, or when they were due anyway if that is later. Both take a batch of an operator's filter's matches, skipping rows
//! another transaction holds.

use oprec_core::operator::{QuarantineParams, ReleaseParams};
use oprec_core::{Ending, Result};

use crate::{PgStore, backend_error, filter};

/// Moves pending matches to held with core's words; returns how many.
pub(crate) async fn operation_quarantine(store: &PgStore, params: QuarantineParams) -> Result<u64> {
    let ending = Ending::quarantined(&params.actor, &params.reason);
    let done = filter::quarantine(store.now_bind(), ending, &params.filter, params.limit)
        .build()
        .execute(&store.pool)
        .await
        .map_err(backend_error)?;
    Ok(done.rows_affected())
}

/// Returns held matches to pending, eligible now or at the later time they were already waiting
/// for (an enqueue's delay, a ladder's rung), and due for a wake-up; returns how many.
pub(crate) async fn operation_release(store: &PgStore, params: ReleaseParams) -> Result<u64> {
    let done = filter::release(store.now_bind(), &params.filter, params.limit)
        .build()
        .execute(&store.pool)
        .await
        .map_err(backend_error)?;
    Ok(done.rows_affected())
}
