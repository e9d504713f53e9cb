//! The scheduler's pick: due operations are marked woken and returned in one write transaction,
//! so two schedulers never publish the same operation from one call each. Paused operations are
//! not due.

use oprec_core::store::WakeDueParams;
use oprec_core::{OperationId, Result};
use sqlx::{QueryBuilder, Sqlite};

use crate::controls::push_not_paused;
use crate::row::parse_uuid;
use crate::{SqliteStore, backend_error, time};

impl SqliteStore {
    /// See [`Store::operation_wake_due`](oprec_core::Store::operation_wake_due).
    pub(crate) async fn wake_due(&self, params: WakeDueParams) -> Result<Vec<OperationId>> {
        let now = self.clock_now();
        let now_text = time::text(now)?;
        let stale_before = time::text(time::after(now, -params.rewake_after)?)?;
        let mut q: QueryBuilder<Sqlite> =
            QueryBuilder::new("UPDATE operations SET last_woken_at = ");
        q.push_bind(&now_text)
            .push(
                " WHERE id IN (SELECT id FROM operations INDEXED BY operations_pending_eligible \
                 WHERE status = 'pending' AND next_eligible_at <= ",
            )
            .push_bind(&now_text)
            .push(" AND (give_up_at IS NULL OR give_up_at >= ")
            .push_bind(&now_text)
            .push(
                ") AND (last_woken_at IS NULL OR last_woken_at < next_eligible_at \
                 OR last_woken_at < ",
            )
            .push_bind(&stale_before)
            .push(")");
        push_not_paused(&mut q, &now_text);
        q.push(" ORDER BY next_eligible_at, id LIMIT ")
            .push_bind(i64::from(params.limit))
            .push(") RETURNING id");
        let _turn = self.write_turn().await;
        let ids: Vec<String> = q
            .build_query_scalar()
            .fetch_all(&self.pool)
            .await
            .map_err(backend_error)?;
        ids.iter()
            .map(|id| parse_uuid(id).map(OperationId::from_uuid))
            .collect()
    }
}
