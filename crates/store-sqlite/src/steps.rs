//! Writes a handler makes during its attempt, fenced by the claim token: the effect's remote
//! identity and durable step checkpoints.

use oprec_core::store::{RemoteIdSetParams, Step, StepSaveParams};
use oprec_core::{Error, OperationId, Result};

use crate::row::{json_text, uuid_text};
use crate::{SqliteStore, backend_error, time};

impl SqliteStore {
    /// See [`Store::operation_remote_id_set`](oprec_core::Store::operation_remote_id_set).
    pub(crate) async fn remote_id_set(&self, params: RemoteIdSetParams) -> Result<()> {
        let now = time::text(self.clock_now())?;
        let _turn = self.write_turn().await;
        let done = sqlx::query(
            "UPDATE operations SET remote_id = ?, updated_at = ?
             WHERE id = ? AND claim_token = ? AND status = 'running'",
        )
        .bind(&params.remote_id)
        .bind(&now)
        .bind(uuid_text(params.id.as_uuid()))
        .bind(uuid_text(&params.claim_token))
        .execute(&self.pool)
        .await
        .map_err(backend_error)?;
        if done.rows_affected() == 1 {
            Ok(())
        } else {
            Err(Error::StaleClaim { id: params.id })
        }
    }

    /// See [`Store::operation_steps_get`](oprec_core::Store::operation_steps_get).
    pub(crate) async fn steps_get(&self, id: OperationId) -> Result<Vec<Step>> {
        let rows: Vec<(String, String, i64, String)> = sqlx::query_as(
            "SELECT name, output, attempt, completed_at FROM operation_steps
             WHERE operation_id = ? ORDER BY completed_at, name",
        )
        .bind(uuid_text(id.as_uuid()))
        .fetch_all(&self.pool)
        .await
        .map_err(backend_error)?;
        rows.into_iter()
            .map(|(name, output, attempt, completed_at)| {
                Ok(Step {
                    name,
                    output: serde_json::from_str(&output).map_err(|e| {
                        Error::backend(false, format!("unreadable step output: {e}"))
                    })?,
                    attempt: u32::try_from(attempt).unwrap_or(0),
                    completed_at: time::parse(&completed_at)?,
                })
            })
            .collect()
    }

    /// See [`Store::operation_step_save`](oprec_core::Store::operation_step_save).
    pub(crate) async fn step_save(&self, params: StepSaveParams) -> Result<()> {
        let now = time::text(self.clock_now())?;
        let output = json_text(&params.output)?;
        let id = uuid_text(params.id.as_uuid());
        let mut tx = self.begin_write().await?;
        let attempt: Option<i64> = sqlx::query_scalar(
            "SELECT attempt FROM operations WHERE id = ? AND claim_token = ? AND status = 'running'",
        )
        .bind(&id)
        .bind(uuid_text(&params.claim_token))
        .fetch_optional(tx.conn())
        .await
        .map_err(backend_error)?;
        let Some(attempt) = attempt else {
            return Err(Error::StaleClaim { id: params.id });
        };
        sqlx::query(
            "INSERT INTO operation_steps (operation_id, name, output, attempt, completed_at)
             VALUES (?, ?, ?, ?, ?) ON CONFLICT (operation_id, name) DO NOTHING",
        )
        .bind(&id)
        .bind(&params.name)
        .bind(&output)
        .bind(attempt)
        .bind(&now)
        .execute(tx.conn())
        .await
        .map_err(backend_error)?;
        tx.commit().await
    }
}
