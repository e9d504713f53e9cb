//! The audit log: every operator action, who, when, what filter, how many, why.

use oprec_core::operator::{AuditEntry, AuditListParams, AuditRecord};
use oprec_core::{Error, Result};

use crate::row::{self, json_text};
use crate::{SqliteStore, backend_error, sql, time};

/// See [`OperatorStore::audit_insert`](oprec_core::OperatorStore::audit_insert).
pub(crate) async fn audit_insert(store: &SqliteStore, entry: AuditEntry) -> Result<()> {
    let now = time::text(store.clock_now())?;
    // SQLite keeps signed 64-bit integers: a count beyond them is refused, not wrapped.
    let affected = i64::try_from(entry.affected).map_err(|_| {
        Error::InvalidInput(format!("affected count {} is out of range", entry.affected))
    })?;
    let filter = json_text(&entry.filter)?;
    let details = json_text(&entry.details)?;
    let _turn = store.write_turn().await;
    sqlx::query(sql::AUDIT_INSERT)
        .bind(now)
        .bind(&entry.actor)
        .bind(&entry.action)
        .bind(filter)
        .bind(affected)
        .bind(&entry.reason)
        .bind(details)
        .execute(&store.pool)
        .await
        .map_err(backend_error)?;
    Ok(())
}

/// See [`OperatorStore::audit_list`](oprec_core::OperatorStore::audit_list).
pub(crate) async fn audit_list(
    store: &SqliteStore,
    params: AuditListParams,
) -> Result<Vec<AuditRecord>> {
    params.check()?;
    let newer = params.page.is_newer();
    let statement = if newer {
        sql::AUDIT_LIST_NEWER
    } else {
        sql::AUDIT_LIST
    };
    let mut rows = sqlx::query(statement)
        .bind(i64::from(params.limit))
        .bind(params.action.as_deref())
        .bind(params.actor.as_deref())
        .bind(params.page.from_id())
        .fetch_all(&store.pool)
        .await
        .map_err(backend_error)?;
    if newer {
        rows.reverse();
    }
    rows.iter().map(row::audit_record).collect()
}
