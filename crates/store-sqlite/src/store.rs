//! The `Store` implementation: the short writes here, the longer ones in their own modules
//! (enqueue, claim, complete, rescue, read).

use std::collections::HashSet;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use oprec_core::store::{
    ClaimByIdsParams, ClaimEligibleParams, Claimed, CompleteParams, CompleteResult, CountRow,
    Enqueued, HeartbeatParams, ListParams, MarkWokenParams, RemoteIdSetParams, RescueParams,
    RescueReport, Step, StepSaveParams, WakeDueParams,
};
use oprec_core::{Error, NewOperation, Operation, OperationDetail, OperationId, Result, Store};
use sqlx::{QueryBuilder, Sqlite};

use crate::row::{distinct_texts, parse_uuid};
use crate::{MIGRATOR, ROWS_PER_STATEMENT, SqliteStore, backend_error, time};

#[async_trait]
impl Store for SqliteStore {
    async fn migrate(&self) -> Result<()> {
        MIGRATOR
            .run(&self.pool)
            .await
            .map_err(|e| Error::backend(false, e))
    }

    async fn now(&self) -> Result<DateTime<Utc>> {
        Ok(self.clock_now())
    }

    async fn operation_insert_many(&self, ops: Vec<NewOperation>) -> Result<Vec<Enqueued>> {
        self.insert_many(ops).await
    }

    async fn operation_claim_by_ids(&self, params: ClaimByIdsParams) -> Result<Vec<Claimed>> {
        self.claim_by_ids(params).await
    }

    async fn operation_claim_eligible(&self, params: ClaimEligibleParams) -> Result<Vec<Claimed>> {
        self.claim_eligible(params).await
    }

    async fn operation_heartbeat(&self, params: HeartbeatParams) -> Result<DateTime<Utc>> {
        self.heartbeat(params).await
    }

    async fn operation_complete_many(
        &self,
        params: Vec<CompleteParams>,
    ) -> Result<Vec<CompleteResult>> {
        self.complete_many(params).await
    }

    async fn operation_rescue_expired(&self, params: RescueParams) -> Result<RescueReport> {
        self.rescue_expired(params).await
    }

    async fn operation_end_past_deadline(&self, limit: u32) -> Result<u64> {
        self.end_past_deadline(limit).await
    }

    async fn operation_remote_id_set(&self, params: RemoteIdSetParams) -> Result<()> {
        self.remote_id_set(params).await
    }

    async fn operation_steps_get(&self, id: OperationId) -> Result<Vec<Step>> {
        self.steps_get(id).await
    }

    async fn operation_step_save(&self, params: StepSaveParams) -> Result<()> {
        self.step_save(params).await
    }

    async fn operation_wake_due(&self, params: WakeDueParams) -> Result<Vec<OperationId>> {
        self.wake_due(params).await
    }

    async fn operation_cancel(&self, ids: Vec<OperationId>) -> Result<Vec<OperationId>> {
        let ids = distinct_texts(&ids);
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let now = time::text(self.clock_now())?;
        let mut cancelled = HashSet::new();
        let mut tx = self.begin_write().await?;
        for chunk in ids.chunks(ROWS_PER_STATEMENT) {
            let mut q: QueryBuilder<Sqlite> = QueryBuilder::new(
                "UPDATE operations SET status = 'cancelled', terminal_reason = 'operator', \
                 terminal_at = ",
            );
            q.push_bind(&now)
                .push(", updated_at = ")
                .push_bind(&now)
                .push(" WHERE status IN ('pending', 'held', 'reconciling') AND id IN (");
            let mut list = q.separated(", ");
            for id in chunk {
                list.push_bind(id);
            }
            q.push(") RETURNING id");
            let done: Vec<String> = q
                .build_query_scalar()
                .fetch_all(tx.conn())
                .await
                .map_err(backend_error)?;
            cancelled.extend(done);
        }
        tx.commit().await?;
        // In the order asked for.
        ids.iter()
            .filter(|id| cancelled.contains(*id))
            .map(|id| parse_uuid(id).map(OperationId::from_uuid))
            .collect()
    }

    async fn operation_mark_woken(&self, params: MarkWokenParams) -> Result<()> {
        let ids = distinct_texts(&params.ids);
        if ids.is_empty() {
            return Ok(());
        }
        let now = time::text(self.clock_now())?;
        let mut tx = self.begin_write().await?;
        for chunk in ids.chunks(ROWS_PER_STATEMENT) {
            let mut q: QueryBuilder<Sqlite> =
                QueryBuilder::new("UPDATE operations SET last_woken_at = ");
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

    async fn operation_get(&self, id: OperationId) -> Result<Option<OperationDetail>> {
        self.get(id).await
    }

    async fn operation_list(&self, params: ListParams) -> Result<Vec<Operation>> {
        self.list(params).await
    }

    async fn operation_count(&self) -> Result<Vec<CountRow>> {
        self.count().await
    }
}
