//! Writes a handler makes during its attempt, fenced by the claim token: the effect's remote
//! identity and durable step checkpoints; and the steps a later attempt resumes from.

use oprec_core::store::{RemoteIdSetParams, Step, StepSaveParams, StepsGetParams};
use oprec_core::{Error, Result};

use crate::row::{self, json_text, uuid_text};
use crate::{SqliteStore, backend_error, sql, time};

/// See [`WorkerStore::operation_remote_id_set`](oprec_core::WorkerStore::operation_remote_id_set).
pub(crate) async fn operation_remote_id_set(
    store: &SqliteStore,
    params: RemoteIdSetParams,
) -> Result<()> {
    let now = time::text(store.clock_now())?;
    let _turn = store.write_turn().await;
    let done = sqlx::query(sql::STEPS_REMOTE_ID_SET)
        .bind(&params.remote_id)
        .bind(&now)
        .bind(uuid_text(params.id.as_uuid()))
        .bind(uuid_text(&params.claim_token))
        .execute(&store.pool)
        .await
        .map_err(backend_error)?;
    if done.rows_affected() == 1 {
        Ok(())
    } else {
        Err(Error::StaleClaim { id: params.id })
    }
}

/// See [`WorkerStore::operation_steps_get`](oprec_core::WorkerStore::operation_steps_get).
pub(crate) async fn operation_steps_get(
    store: &SqliteStore,
    params: StepsGetParams,
) -> Result<Vec<Step>> {
    let rows = sqlx::query(sql::STEPS_GET)
        .bind(uuid_text(params.id.as_uuid()))
        .fetch_all(&store.pool)
        .await
        .map_err(backend_error)?;
    rows.iter().map(row::step).collect()
}

/// See [`WorkerStore::operation_step_save`](oprec_core::WorkerStore::operation_step_save).
pub(crate) async fn operation_step_save(store: &SqliteStore, params: StepSaveParams) -> Result<()> {
    let now = time::text(store.clock_now())?;
    let output = json_text(&params.output)?;
    let id = uuid_text(params.id.as_uuid());
    // The claim is checked and the step written under one write lock, so the claim cannot move
    // on in between.
    let mut tx = store.begin_write().await?;
    let attempt: Option<i64> = sqlx::query_scalar(sql::STEPS_CLAIM_ATTEMPT)
        .bind(&id)
        .bind(uuid_text(&params.claim_token))
        .fetch_optional(tx.conn())
        .await
        .map_err(backend_error)?;
    let Some(attempt) = attempt else {
        return Err(Error::StaleClaim { id: params.id });
    };
    sqlx::query(sql::STEPS_SAVE)
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
