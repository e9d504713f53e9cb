//! Pauses and postponements ([`OperatorStore`](oprec_core::OperatorStore)): the `controls`
//! table. What a control holds back is core's rule (`not_held_back_sql`), spliced into the claim,
//! wake-up and work-exists statements; this module only keeps the rows.

use chrono::{DateTime, Utc};
use oprec_core::Result;
use oprec_core::operator::{Control, ControlRemoveParams, ControlSetParams};

use crate::row::Columns;
use crate::{PgStore, backend_error, sql};

/// Sets, or replaces, the control on its scope and value.
pub(crate) async fn control_set(store: &PgStore, params: ControlSetParams) -> Result<Control> {
    let created_at: DateTime<Utc> = sqlx::query_scalar(sql::CONTROLS_SET)
        .bind(params.scope.as_str())
        .bind(&params.value)
        .bind(params.action.as_str())
        .bind(params.until)
        .bind(&params.reason)
        .bind(&params.actor)
        .bind(store.now_bind())
        .fetch_one(&store.pool)
        .await
        .map_err(backend_error)?;
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
    let done = sqlx::query(sql::CONTROLS_REMOVE)
        .bind(params.scope.as_str())
        .bind(&params.value)
        .execute(&store.pool)
        .await
        .map_err(backend_error)?;
    Ok(done.rows_affected() > 0)
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
