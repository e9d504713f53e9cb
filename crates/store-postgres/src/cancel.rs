//! Operator cancellation ([`OperatorStore`](oprec_core::OperatorStore)): waiting operations
//! (pending, held, reconciling) end cancelled; running and terminal ones are left alone, so a
//! cancel never races an attempt in flight.

use std::collections::HashSet;

use oprec_core::operator::CancelParams;
use oprec_core::{OperationId, Result};
use uuid::Uuid;

use crate::{PgStore, backend_error, row, sql};

/// Cancels the waiting operations among `ids`; returns those cancelled, each once, in the order
/// asked for.
pub(crate) async fn operation_cancel(
    store: &PgStore,
    params: CancelParams,
) -> Result<Vec<OperationId>> {
    if params.ids.is_empty() {
        return Ok(Vec::new());
    }
    let cancelled: HashSet<Uuid> = sqlx::query_scalar::<_, Uuid>(sql::CANCEL_WAITING)
        .bind(store.now_bind())
        .bind(row::uuids(&params.ids))
        .fetch_all(&store.pool)
        .await
        .map_err(backend_error)?
        .into_iter()
        .collect();
    let mut seen = HashSet::new();
    Ok(params
        .ids
        .into_iter()
        .filter(|id| cancelled.contains(id.as_uuid()) && seen.insert(*id))
        .collect())
}
