//! Pauses and postponements: rows of `controls` that hold back claims and wake-ups of the kind,
//! last failure class or dependency they name, while `until` is NULL or still ahead.

use oprec_core::operator::{Control, ControlScope, ControlSetParams};
use oprec_core::{Error, Result};
use sqlx::{QueryBuilder, Sqlite};

use crate::row::Columns;
use crate::{SqliteStore, backend_error, time};

/// Appends the claim and wake-up condition that no control in force at `now` (stored text)
/// matches the row of the table `operations`.
pub(crate) fn push_not_paused(q: &mut QueryBuilder<Sqlite>, now: &str) {
    q.push(
        " AND NOT EXISTS (SELECT 1 FROM controls c \
         WHERE (c.until IS NULL OR c.until > ",
    )
    .push_bind(now.to_owned())
    .push(
        ") AND ((c.scope = 'kind' AND c.value = operations.kind) \
         OR (c.scope = 'failure_class' AND c.value = operations.last_failure_class) \
         OR (c.scope = 'dependency' AND c.value = operations.dependency)))",
    );
}

impl SqliteStore {
    /// See [`OperatorStore::control_set`](oprec_core::OperatorStore::control_set).
    pub(crate) async fn set_control(&self, p: ControlSetParams) -> Result<Control> {
        let now = self.clock_now();
        let until = time::opt_text(p.until)?;
        let _turn = self.write_turn().await;
        sqlx::query(
            "INSERT INTO controls (scope, value, action, until, reason, actor, created_at)
             VALUES (?, ?, ?, ?, ?, ?, ?)
             ON CONFLICT (scope, value) DO UPDATE SET action = excluded.action,
                 until = excluded.until, reason = excluded.reason, actor = excluded.actor,
                 created_at = excluded.created_at",
        )
        .bind(p.scope.as_str())
        .bind(&p.value)
        .bind(p.action.as_str())
        .bind(until)
        .bind(&p.reason)
        .bind(&p.actor)
        .bind(time::text(now)?)
        .execute(&self.pool)
        .await
        .map_err(backend_error)?;
        Ok(Control {
            scope: p.scope,
            value: p.value,
            action: p.action,
            until: p.until,
            reason: p.reason,
            actor: p.actor,
            created_at: now,
        })
    }

    /// See [`OperatorStore::control_remove`](oprec_core::OperatorStore::control_remove).
    pub(crate) async fn remove_control(&self, scope: ControlScope, value: &str) -> Result<bool> {
        let _turn = self.write_turn().await;
        let done = sqlx::query("DELETE FROM controls WHERE scope = ? AND value = ?")
            .bind(scope.as_str())
            .bind(value)
            .execute(&self.pool)
            .await
            .map_err(backend_error)?;
        Ok(done.rows_affected() > 0)
    }

    /// See [`OperatorStore::control_list`](oprec_core::OperatorStore::control_list).
    pub(crate) async fn controls_in_force(&self) -> Result<Vec<Control>> {
        let rows = sqlx::query(
            "SELECT scope, value, action, until, reason, actor, created_at FROM controls
             WHERE until IS NULL OR until > ? ORDER BY scope, value",
        )
        .bind(time::text(self.clock_now())?)
        .fetch_all(&self.pool)
        .await
        .map_err(backend_error)?;
        rows.iter()
            .map(|r| {
                let c = Columns(r);
                Ok(Control {
                    scope: c.parsed("scope")?,
                    value: c.text("value")?,
                    action: c.parsed("action")?,
                    until: c.opt_time("until")?,
                    reason: c.opt_text("reason")?,
                    actor: c.text("actor")?,
                    created_at: c.time("created_at")?,
                })
            })
            .collect::<Result<_, Error>>()
    }
}
