//! The `workers` table: running workers' heartbeats, and the pending operations of kinds that no
//! live worker handles.

use chrono::Duration;
use oprec_core::{Result, UnhandledKind, WorkerBeatParams, WorkerRecord};
use sqlx::Row;

use crate::{SqliteStore, backend_error, time};

impl SqliteStore {
    /// See [`OperatorStore::worker_beat`](oprec_core::OperatorStore::worker_beat).
    pub(crate) async fn beat(&self, p: WorkerBeatParams) -> Result<()> {
        let now = time::text(self.clock_now())?;
        let mut kinds = p.kinds;
        kinds.sort();
        kinds.dedup();
        let kinds =
            serde_json::to_string(&kinds).map_err(|e| oprec_core::Error::backend(false, e))?;
        let _turn = self.write_turn().await;
        sqlx::query(
            "INSERT INTO workers (id, host, pid, kinds, code_version, started_at, last_seen_at)
             VALUES (?, ?, ?, ?, ?, ?, ?)
             ON CONFLICT (id) DO UPDATE SET host = excluded.host, pid = excluded.pid,
                 kinds = excluded.kinds, code_version = excluded.code_version,
                 started_at = excluded.started_at, last_seen_at = excluded.last_seen_at",
        )
        .bind(&p.id)
        .bind(&p.host)
        .bind(i64::from(p.pid))
        .bind(kinds)
        .bind(&p.code_version)
        .bind(time::text(time::truncate(p.started_at))?)
        .bind(now)
        .execute(&self.pool)
        .await
        .map_err(backend_error)?;
        Ok(())
    }

    /// See [`OperatorStore::worker_remove`](oprec_core::OperatorStore::worker_remove).
    pub(crate) async fn remove_worker(&self, id: &str) -> Result<bool> {
        let _turn = self.write_turn().await;
        let done = sqlx::query("DELETE FROM workers WHERE id = ?")
            .bind(id)
            .execute(&self.pool)
            .await
            .map_err(backend_error)?;
        Ok(done.rows_affected() > 0)
    }

    /// The stored text of now − `seen_within`: rows seen at or after it are live.
    fn live_since(&self, seen_within: Duration) -> Result<String> {
        time::after(self.clock_now(), -seen_within).and_then(time::text)
    }

    /// See [`OperatorStore::worker_list`](oprec_core::OperatorStore::worker_list).
    pub(crate) async fn live_workers(&self, seen_within: Duration) -> Result<Vec<WorkerRecord>> {
        let rows = sqlx::query(
            "SELECT id, host, pid, kinds, code_version, started_at, last_seen_at FROM workers
             WHERE last_seen_at >= ? ORDER BY id",
        )
        .bind(self.live_since(seen_within)?)
        .fetch_all(&self.pool)
        .await
        .map_err(backend_error)?;
        rows.iter()
            .map(|r| {
                let kinds: String = r.try_get("kinds").map_err(backend_error)?;
                let pid: i64 = r.try_get("pid").map_err(backend_error)?;
                Ok(WorkerRecord {
                    id: r.try_get("id").map_err(backend_error)?,
                    host: r.try_get("host").map_err(backend_error)?,
                    pid: u32::try_from(pid).unwrap_or(u32::MAX),
                    kinds: serde_json::from_str(&kinds)
                        .map_err(|e| oprec_core::Error::backend(false, e))?,
                    code_version: r.try_get("code_version").map_err(backend_error)?,
                    started_at: time::parse(r.try_get("started_at").map_err(backend_error)?)?,
                    last_seen_at: time::parse(r.try_get("last_seen_at").map_err(backend_error)?)?,
                })
            })
            .collect()
    }

    /// See [`OperatorStore::operation_unhandled`](oprec_core::OperatorStore::operation_unhandled).
    pub(crate) async fn unhandled(&self, seen_within: Duration) -> Result<Vec<UnhandledKind>> {
        let rows = sqlx::query(
            "SELECT kind, count(*) AS pending, sum(next_eligible_at <= ?) AS eligible,
                    min(created_at) AS oldest
             FROM operations
             WHERE status = 'pending'
               AND kind NOT IN (SELECT k.value FROM workers w, json_each(w.kinds) k
                                WHERE w.last_seen_at >= ?)
             GROUP BY kind ORDER BY kind",
        )
        .bind(time::text(self.clock_now())?)
        .bind(self.live_since(seen_within)?)
        .fetch_all(&self.pool)
        .await
        .map_err(backend_error)?;
        rows.iter()
            .map(|r| {
                let pending: i64 = r.try_get("pending").map_err(backend_error)?;
                let eligible: i64 = r.try_get("eligible").map_err(backend_error)?;
                Ok(UnhandledKind {
                    kind: r.try_get("kind").map_err(backend_error)?,
                    pending: pending as u64,
                    eligible: eligible as u64,
                    oldest_created_at: time::parse(r.try_get("oldest").map_err(backend_error)?)?,
                })
            })
            .collect()
    }
}
