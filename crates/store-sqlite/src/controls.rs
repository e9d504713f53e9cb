//! Pauses and postponements: rows of `controls` that hold back claims and wake-ups of the kind,
//! last failure class or dependency they name, while `until` is NULL or still ahead. What "holds
//! back" means is core's ([`oprec_core::not_held_back_sql`], spliced into the claim, wake-up and
//! work-exists statements); this module only keeps the rows.

use oprec_core::operator::{Control, ControlRemoveParams, ControlSetParams};
use oprec_core::{ControlScope, Result};

use crate::{SqliteStore, backend_error, row, sql, time};

/// See [`OperatorStore::control_set`](oprec_core::OperatorStore::control_set).
pub(crate) async fn control_set(store: &SqliteStore, params: ControlSetParams) -> Result<Control> {
    let now = store.clock_now();
    let until = time::opt_text(params.until)?;
    let _turn = store.write_turn().await;
    let mut tx = store.pool.begin().await.map_err(backend_error)?;
    sqlx::query(sql::CONTROLS_SET)
        .bind(params.scope.as_str())
        .bind(&params.value)
        .bind(params.action.as_str())
        .bind(until)
        .bind(&params.reason)
        .bind(&params.actor)
        .bind(time::text(now)?)
        .execute(&mut *tx)
        .await
        .map_err(backend_error)?;
    wake_reset(&mut tx, params.scope, &params.value).await?;
    tx.commit().await.map_err(backend_error)?;
    Ok(Control {
        scope: params.scope,
        value: params.value,
        action: params.action,
        until: params.until,
        reason: params.reason,
        actor: params.actor,
        created_at: now,
    })
}

/// See [`OperatorStore::control_remove`](oprec_core::OperatorStore::control_remove).
pub(crate) async fn control_remove(
    store: &SqliteStore,
    params: ControlRemoveParams,
) -> Result<bool> {
    let _turn = store.write_turn().await;
    let mut tx = store.pool.begin().await.map_err(backend_error)?;
    let done = sqlx::query(sql::CONTROLS_REMOVE)
        .bind(params.scope.as_str())
        .bind(&params.value)
        .execute(&mut *tx)
        .await
        .map_err(backend_error)?;
    if done.rows_affected() > 0 {
        wake_reset(&mut tx, params.scope, &params.value).await?;
    }
    tx.commit().await.map_err(backend_error)?;
    Ok(done.rows_affected() > 0)
}

/// Marks the pending operations a control names as never woken: the scheduler wakes them as
/// soon as nothing holds them back (at once, when the control is lifted by hand).
async fn wake_reset(
    tx: &mut sqlx::Transaction<'_, sqlx::Sqlite>,
    scope: ControlScope,
    value: &str,
) -> Result<()> {
    sqlx::query(sql::controls_wake_reset(scope))
        .bind(value)
        .execute(&mut **tx)
        .await
        .map_err(backend_error)?;
    Ok(())
}

/// See [`OperatorStore::control_list`](oprec_core::OperatorStore::control_list).
pub(crate) async fn control_list(store: &SqliteStore) -> Result<Vec<Control>> {
    let rows = sqlx::query(sql::CONTROLS_LIST)
        .bind(time::text(store.clock_now())?)
        .fetch_all(&store.pool)
        .await
        .map_err(backend_error)?;
    rows.iter().map(row::control).collect()
}
