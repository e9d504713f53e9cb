//! Dead-letter announcements ([`MaintenanceStore`](oprec_core::MaintenanceStore)): dead
//! operations whose promotion has not been announced yet, and marking them announced, so every
//! promotion is announced once.

use oprec_core::maintenance::{DeadUnalertedParams, MarkAlertedParams};
use oprec_core::{Operation, Result};

use crate::{PgStore, backend_error, row, sql};

/// Dead operations not announced yet, oldest first.
pub(crate) async fn operation_dead_unalerted(
    store: &PgStore,
    params: DeadUnalertedParams,
) -> Result<Vec<Operation>> {
    let rows = sqlx::query(sql::ALERTS_DEAD_UNALERTED)
        .bind(i64::from(params.limit))
        .fetch_all(&store.pool)
        .await
        .map_err(backend_error)?;
    rows.iter().map(row::operation).collect()
}

/// Records that these promotions were announced.
pub(crate) async fn operation_mark_alerted(
    store: &PgStore,
    params: MarkAlertedParams,
) -> Result<()> {
    sqlx::query(sql::ALERTS_MARK_ALERTED)
        .bind(store.now_bind())
        .bind(row::uuids(&params.ids))
        .execute(&store.pool)
        .await
        .map_err(backend_error)?;
    Ok(())
}
