//! Quarantine and release: pending operations set aside as held, with who and why kept in their
//! `last_error`, and held ones returned to pending, eligible at once.

use oprec_core::Result;
use oprec_core::operator::{QuarantineParams, ReleaseParams};
use sqlx::{QueryBuilder, Sqlite};

use crate::filter::push_filter;
use crate::{SqliteStore, backend_error, time};

impl SqliteStore {
    /// See [`OperatorStore::operation_quarantine`](oprec_core::OperatorStore::operation_quarantine).
    pub(crate) async fn quarantine(&self, p: QuarantineParams) -> Result<u64> {
        let now = time::text(self.clock_now())?;
        // The summary of the failure that brought the operation here stays ("quarantined" when
        // there was none); the decision and next action are new. json_insert and json_set change
        // only the keys they name, as PostgreSQL's `||` does.
        let mut q: QueryBuilder<Sqlite> =
            QueryBuilder::new("UPDATE operations SET status = 'held', updated_at = ");
        q.push_bind(now)
            .push(
                ", last_error = json_set(\
                 json_insert(coalesce(last_error, '{}'), '$.summary', 'quarantined'), \
                 '$.decision', ",
            )
            .push_bind(format!("quarantined by {}: {}", p.actor, p.reason))
            .push(
                ", '$.next_action', \
                 'repair the input or the handler, then release it (oprec release)') \
                 WHERE id IN (SELECT o.id FROM operations o WHERE o.status = 'pending'",
            );
        push_filter(&mut q, &p.filter)?;
        q.push(" ORDER BY o.id LIMIT ")
            .push_bind(i64::from(p.limit))
            .push(")");
        // One statement, so atomic on its own.
        let _turn = self.write_turn().await;
        let done = q.build().execute(&self.pool).await.map_err(backend_error)?;
        Ok(done.rows_affected())
    }

    /// See [`OperatorStore::operation_release`](oprec_core::OperatorStore::operation_release).
    pub(crate) async fn release(&self, p: ReleaseParams) -> Result<u64> {
        let now = time::text(self.clock_now())?;
        let mut q: QueryBuilder<Sqlite> =
            QueryBuilder::new("UPDATE operations SET status = 'pending', next_eligible_at = ");
        q.push_bind(&now)
            .push(", last_woken_at = NULL, updated_at = ")
            .push_bind(&now)
            .push(" WHERE id IN (SELECT o.id FROM operations o WHERE o.status = 'held'");
        push_filter(&mut q, &p.filter)?;
        q.push(" ORDER BY o.id LIMIT ")
            .push_bind(i64::from(p.limit))
            .push(")");
        let _turn = self.write_turn().await;
        let done = q.build().execute(&self.pool).await.map_err(backend_error)?;
        Ok(done.rows_affected())
    }
}
