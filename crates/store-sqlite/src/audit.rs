//! The audit log: every operator action, who, when, what filter, how many, why.

use oprec_core::Result;
use oprec_core::operator::{AuditEntry, AuditRecord};

use crate::row::{Columns, json_text};
use crate::{SqliteStore, backend_error, time};

impl SqliteStore {
    /// See [`OperatorStore::audit_insert`](oprec_core::OperatorStore::audit_insert).
    pub(crate) async fn audit_append(&self, e: AuditEntry) -> Result<()> {
        let now = time::text(self.clock_now())?;
        let filter = json_text(&e.filter)?;
        let details = json_text(&e.details)?;
        let _turn = self.write_turn().await;
        sqlx::query(
            "INSERT INTO audit_log (at, actor, action, filter, affected, reason, details)
             VALUES (?, ?, ?, ?, ?, ?, ?)",
        )
        .bind(now)
        .bind(&e.actor)
        .bind(&e.action)
        .bind(filter)
        // Stored as SQLite's (signed) integer and read back the same way: the cast round-trips.
        .bind(e.affected as i64)
        .bind(&e.reason)
        .bind(details)
        .execute(&self.pool)
        .await
        .map_err(backend_error)?;
        Ok(())
    }

    /// See [`OperatorStore::audit_list`](oprec_core::OperatorStore::audit_list).
    pub(crate) async fn audit_newest(&self, limit: u32) -> Result<Vec<AuditRecord>> {
        let rows = sqlx::query(
            "SELECT id, at, actor, action, filter, affected, reason, details FROM audit_log
             ORDER BY id DESC LIMIT ?",
        )
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await
        .map_err(backend_error)?;
        rows.iter()
            .map(|r| {
                let c = Columns(r);
                Ok(AuditRecord {
                    id: c.int("id")?,
                    at: c.time("at")?,
                    entry: AuditEntry {
                        actor: c.text("actor")?,
                        action: c.text("action")?,
                        filter: c.json("filter")?,
                        affected: c.int("affected")? as u64,
                        reason: c.opt_text("reason")?,
                        details: c.json("details")?,
                    },
                })
            })
            .collect()
    }
}
