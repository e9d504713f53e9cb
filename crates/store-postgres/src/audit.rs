//! The audit log ([`OperatorStore`](oprec_core::OperatorStore)): every operator action, who,
//! when, what filter, how many and why, appended and read back newest first.

use oprec_core::Result;
use oprec_core::operator::{AuditEntry, AuditListParams, AuditRecord};

use crate::row::Columns;
use crate::{PgStore, backend_error, sql};

/// Appends an entry, stamped with the store's "now".
pub(crate) async fn audit_insert(store: &PgStore, entry: AuditEntry) -> Result<()> {
    let affected = i64::try_from(entry.affected)
        .map_err(|e| oprec_core::Error::InvalidInput(format!("affected count: {e}")))?;
    sqlx::query(sql::AUDIT_INSERT)
        .bind(store.now_bind())
        .bind(&entry.actor)
        .bind(&entry.action)
        .bind(&entry.filter)
        .bind(affected)
        .bind(&entry.reason)
        .bind(&entry.details)
        .execute(&store.pool)
        .await
        .map_err(backend_error)?;
    Ok(())
}

/// A page of audit rows, newest first.
pub(crate) async fn audit_list(
    store: &PgStore,
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
    rows.iter()
        .map(|r| {
            let c = Columns(r);
            Ok(AuditRecord {
                id: c.get("id")?,
                at: c.get("at")?,
                entry: AuditEntry {
                    actor: c.get("actor")?,
                    action: c.get("action")?,
                    filter: c.get("filter")?,
                    affected: c.big_count("affected")?,
                    reason: c.get("reason")?,
                    details: c.get("details")?,
                },
            })
        })
        .collect()
}
