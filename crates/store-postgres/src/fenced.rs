//! The fenced transaction on PostgreSQL ([`FencedStore`]): a transaction on the store's pool in
//! which a handler writes its effect, and in which the claim's completion is applied by the same
//! statement as every other completion (`complete_apply.sql`). The effect commits with the
//! completion, or rolls back with it when the claim token is stale.
//!
//! The operation's row is not locked while the handler works: the completion's `UPDATE` takes
//! the row lock at the end and re-reads the row, so a rescuer or another worker that took the
//! claim over meanwhile makes it stale. A worker stopped inside the transaction holds only the
//! locks of its own effect rows, until `idle_in_transaction_session_timeout` ends its session
//! (see [`IDLE_IN_TRANSACTION_TIMEOUT`](crate::IDLE_IN_TRANSACTION_TIMEOUT)).
//!
//! Each open fenced transaction holds one of the store's pooled connections until it ends: a
//! worker whose handlers all hold one leaves its heartbeats and claims waiting for a connection.
//! Size the pool above the number of fenced transactions open at once (the worker's concurrency,
//! at most), and keep them short: the effect's statements, not the remote calls around them.

use async_trait::async_trait;
use oprec_core::fenced::{FencedBeginParams, FencedCompleteParams};
use oprec_core::store::{ClaimCurrentParams, CompleteResult};
use oprec_core::{Error, FencedStore, Result};
use sqlx::postgres::PgConnection;
use sqlx::{Postgres, Transaction};

use crate::{PgStore, backend_error, claim, complete, sql};

/// A fenced transaction on PostgreSQL: run the effect's statements on [`PgFencedTx::conn`].
#[derive(Debug)]
pub struct PgFencedTx {
    tx: Transaction<'static, Postgres>,
}

impl PgFencedTx {
    /// The connection inside the transaction, for the handler's statements.
    pub fn conn(&mut self) -> &mut PgConnection {
        &mut self.tx
    }
}

#[async_trait]
impl FencedStore for PgStore {
    type Tx = PgFencedTx;

    async fn operation_fenced_begin(&self, params: FencedBeginParams) -> Result<PgFencedTx> {
        let mut tx = self.pool.begin().await.map_err(backend_error)?;
        let current = claim::claim_current_on(
            &mut *tx,
            self.now_bind(),
            ClaimCurrentParams {
                id: params.id,
                claim_token: params.claim_token,
            },
        )
        .await?;
        if !current {
            tx.rollback().await.map_err(backend_error)?;
            return Err(Error::StaleClaim { id: params.id });
        }
        Ok(PgFencedTx { tx })
    }

    async fn operation_fenced_complete(
        &self,
        params: FencedCompleteParams<PgFencedTx>,
    ) -> Result<CompleteResult> {
        let FencedCompleteParams { mut tx, completion } = params;
        let completions = [completion];
        // The completion is planned as on the pool path (sql::MATCH_BATCH_BY_HASH): a connection
        // keeps the plan it caches for the statement, whichever path planned it. The handler's
        // statements have run; the settings end with this transaction.
        sqlx::raw_sql(sql::MATCH_BATCH_SETTINGS)
            .execute(&mut *tx.tx)
            .await
            .map_err(backend_error)?;
        let result = complete::apply_on(&mut *tx.tx, self.now_bind(), &completions)
            .await?
            .pop()
            .ok_or_else(|| Error::backend(false, "a fenced completion returned no result"))?;
        match result {
            CompleteResult::Applied => tx.tx.commit().await.map_err(backend_error)?,
            CompleteResult::Stale => {
                tx.tx.rollback().await.map_err(backend_error)?;
                complete::record_stale(self, &completions, &[result]).await?;
            }
        }
        Ok(result)
    }
}
