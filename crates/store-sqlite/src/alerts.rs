//! Dead-letter alerts: promotions to dead not yet announced to their sink, and the record that
//! they were.

use oprec_core::{Operation, OperationId, Result};
use sqlx::{QueryBuilder, Sqlite};

use crate::row::{self, distinct_texts, operation_columns};
use crate::{ROWS_PER_STATEMENT, SqliteStore, backend_error, time};

impl SqliteStore {
    /// See [`OperatorStore::operation_dead_unalerted`](oprec_core::OperatorStore::operation_dead_unalerted).
    pub(crate) async fn dead_unalerted(&self, limit: u32) -> Result<Vec<Operation>> {
        // INDEXED BY the partial index of unannounced dead rows, for the reason given in claim.rs.
        let rows = sqlx::query(concat!(
            "SELECT ",
            operation_columns!(),
            " FROM operations INDEXED BY operations_dead_unalerted
             WHERE status = 'dead' AND alerted_at IS NULL
             ORDER BY terminal_at, id LIMIT ?"
        ))
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await
        .map_err(backend_error)?;
        rows.iter().map(row::operation).collect()
    }

    /// See [`OperatorStore::operation_mark_alerted`](oprec_core::OperatorStore::operation_mark_alerted).
    pub(crate) async fn mark_alerted(&self, ids: Vec<OperationId>) -> Result<()> {
        let ids = distinct_texts(&ids);
        if ids.is_empty() {
            return Ok(());
        }
        let now = time::text(self.clock_now())?;
        let mut tx = self.begin_write().await?;
        for chunk in ids.chunks(ROWS_PER_STATEMENT) {
            let mut q: QueryBuilder<Sqlite> =
                QueryBuilder::new("UPDATE operations SET alerted_at = ");
            q.push_bind(&now).push(" WHERE id IN (");
            let mut list = q.separated(", ");
            for id in chunk {
                list.push_bind(id);
            }
            q.push(")");
            q.build().execute(tx.conn()).await.map_err(backend_error)?;
        }
        tx.commit().await
    }
}
