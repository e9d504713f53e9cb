//! Cancelling by an operator: operations that are waiting (pending, held or reconciling) end
//! cancelled; running and terminal ones are left alone, so a cancel never races an attempt.

use std::collections::HashSet;

use oprec_core::operator::CancelParams;
use oprec_core::{OperationId, Result};

use crate::row::{distinct_texts, json_text, parse_id};
use crate::{SqliteStore, backend_error, sql, time};

/// See [`OperatorStore::operation_cancel`](oprec_core::OperatorStore::operation_cancel).
pub(crate) async fn operation_cancel(
    store: &SqliteStore,
    params: CancelParams,
) -> Result<Vec<OperationId>> {
    let ids = distinct_texts(&params.ids);
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let now = time::text(store.clock_now())?;
    let cancelled: HashSet<String> = {
        let _turn = store.write_turn().await;
        sqlx::query_scalar(sql::CANCEL_WAITING)
            .bind(now)
            .bind(json_text(&ids)?)
            .fetch_all(&store.pool)
            .await
            .map_err(backend_error)?
            .into_iter()
            .collect()
    };
    // In the order asked for.
    ids.iter()
        .filter(|id| cancelled.contains(*id))
        .map(|id| parse_id(id))
        .collect()
}
