//! The fenced transaction on SQLite ([`FencedStore`]): a write transaction (`BEGIN IMMEDIATE`,
//! this process's writing turn) in which a handler writes its effect, and in which the claim's
//! completion is applied by the same statements as every other completion
//! (`complete_apply.sql`, `complete_attempts.sql`). The effect commits with the completion, or
//! rolls back with it when the claim token is stale.
//!
//! SQLite has one writer at a time: while a fenced transaction is open, every other write (this
//! process's heartbeats and completions, other processes' claims) waits for it. Keep the work
//! inside it short: the effect's statements, not the remote calls around them.

use async_trait::async_trait;
use oprec_core::fenced::{FencedBeginParams, FencedCompleteParams};
use oprec_core::store::{ClaimCurrentParams, CompleteResult};
use oprec_core::{Error, FencedStore, Result};
use sqlx::SqliteConnection;

use crate::write::WriteTx;
use crate::{SqliteStore, claim, complete, time};

/// A fenced transaction on SQLite: run the effect's statements on [`SqliteFencedTx::conn`].
pub struct SqliteFencedTx {
    tx: WriteTx,
}

impl std::fmt::Debug for SqliteFencedTx {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteFencedTx").finish_non_exhaustive()
    }
}

impl SqliteFencedTx {
    /// The connection inside the transaction, for the handler's statements.
    pub fn conn(&mut self) -> &mut SqliteConnection {
        self.tx.conn()
    }
}

#[async_trait]
impl FencedStore for SqliteStore {
    type Tx = SqliteFencedTx;

    async fn operation_fenced_begin(&self, params: FencedBeginParams) -> Result<SqliteFencedTx> {
        let mut tx = self.begin_write().await?;
        let now = time::text(self.clock_now())?;
        let current = claim::claim_current_on(
            tx.conn(),
            &now,
            ClaimCurrentParams {
                id: params.id,
                claim_token: params.claim_token,
            },
        )
        .await?;
        if !current {
            tx.rollback().await?;
            return Err(Error::StaleClaim { id: params.id });
        }
        Ok(SqliteFencedTx { tx })
    }

    async fn operation_fenced_complete(
        &self,
        params: FencedCompleteParams<SqliteFencedTx>,
    ) -> Result<CompleteResult> {
        let FencedCompleteParams { mut tx, completion } = params;
        let completions = [completion];
        let now = time::text(self.clock_now())?;
        let result = complete::apply_on(tx.conn(), &completions, &now)
            .await?
            .pop()
            .ok_or_else(|| Error::backend(false, "a fenced completion returned no result"))?;
        match result {
            CompleteResult::Applied => tx.tx.commit().await?,
            CompleteResult::Stale => {
                // Rolled back first: the refusal is written in a transaction of its own.
                tx.tx.rollback().await?;
                let mut note = self.begin_write().await?;
                complete::record_stale(note.conn(), &completions, &[result], &now).await?;
                note.commit().await?;
            }
        }
        Ok(result)
    }
}
