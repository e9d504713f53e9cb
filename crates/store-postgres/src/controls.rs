//! Pauses and postponements ([`OperatorStore`](oprec_core::OperatorStore)): the `controls`
//! table. What a control holds back is core's rule (`not_held_back_sql`), spliced into the claim,
//! wake-up and work-exists statements; this module only keeps the rows.

use chrono::{DateTime, Utc};
use oprec_core::operator::{Control, ControlRemoveParams, ControlSetParams};
use oprec_core::{ControlScope, Result};

use crate::row::Columns;
use crate::{PgStore, backend_error, sql};

/// Sets, or replaces, the control on its scope and value.
pub(crate) async fn control_set(store: &PgStore, params: ControlSetParams) -> Result<Control> {
    let mut tx = store.pool.begin().await.map_err(backend_error)?;
    let created_at: DateTime<Utc> = sqlx::query_scalar(sql::CONTROLS_SET)
        .bind(params.scope.as_str())
        .bind(&params.value)
        .bind(params.action.as_str())
        .bind(params.until)
        .bind(&params.reason)
        .bind(&params.actor)
        .bind(store.now_bind())
        .fetch_one(&mut *tx)
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
        created_at,
    })
}

/// Removes the control on a scope and value; false when there was none.
pub(crate) async fn control_remove(store: &PgStore, params: ControlRemoveParams) -> Result<bool> {
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
    tx: &mut sqlx::Transaction<'_, sqlx::Postgres>,
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

/// The controls in force now.
pub(crate) async fn control_list(store: &PgStore) -> Result<Vec<Control>> {
    let rows = sqlx::query(sql::CONTROLS_LIST)
        .bind(store.now_bind())
        .fetch_all(&store.pool)
        .await
        .map_err(backend_error)?;
    rows.iter()
        .map(|r| {
            let c = Columns(r);
            Ok(Control {
                scope: c.parsed("scope")?,
                value: c.get("value")?,
                action: c.parsed("action")?,
                until: c.get("until")?,
                reason: c.get("reason")?,
                actor: c.get("actor")?,
                created_at: c.get("created_at")?,
            })
        })
        .collect()
}
