//! What an attempt records while it runs ([`WorkerStore`](oprec_core::WorkerStore)): the
//! effect's remote identity and durable step checkpoints, both fenced by the claim token, so a
//! worker whose lease was taken over writes nothing.

use oprec_core::store::{RemoteIdSetParams, Step, StepSaveParams, StepsGetParams};
use oprec_core::{Error, Result};

use crate::row::Columns;
use crate::{PgStore, backend_error, sql};

/// Records the remote identity; a stale token is [`Error::StaleClaim`].
pub(crate) async fn operation_remote_id_set(
    store: &PgStore,
    params: RemoteIdSetParams,
) -> Result<()> {
    let done = sqlx::query(sql::STEPS_REMOTE_ID_SET)
        .bind(store.now_bind())
        .bind(params.id.as_uuid())
        .bind(&params.remote_id)
        .bind(params.claim_token)
        .execute(&store.pool)
        .await
        .map_err(backend_error)?;
    if done.rows_affected() == 1 {
        Ok(())
    } else {
        Err(Error::StaleClaim { id: params.id })
    }
}

/// The operation's completed steps, in the order they completed.
pub(crate) async fn operation_steps_get(
    store: &PgStore,
    params: StepsGetParams,
) -> Result<Vec<Step>> {
    let rows = sqlx::query(sql::STEPS_GET)
        .bind(params.id.as_uuid())
        .fetch_all(&store.pool)
        .await
        .map_err(backend_error)?;
    rows.iter()
        .map(|r| {
            let c = Columns(r);
            Ok(Step {
                name: c.get("name")?,
                output: c.get("output")?,
                attempt: c.count("attempt")?,
                completed_at: c.get("completed_at")?,
            })
        })
        .collect()
}

/// Saves a completed step (a step saved before keeps its first output); a stale token is
/// [`Error::StaleClaim`].
pub(crate) async fn operation_step_save(store: &PgStore, params: StepSaveParams) -> Result<()> {
    let claim_held: Option<bool> = sqlx::query_scalar(sql::STEPS_SAVE)
        .bind(store.now_bind())
        .bind(params.id.as_uuid())
        .bind(&params.name)
        .bind(&params.output)
        .bind(params.claim_token)
        .fetch_optional(&store.pool)
        .await
        .map_err(backend_error)?;
    claim_held
        .map(|_| ())
        .ok_or(Error::StaleClaim { id: params.id })
}
