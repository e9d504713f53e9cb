//! The `workers` table: running workers' heartbeats, and the pending operations of kinds that no
//! live worker handles.

use chrono::{DateTime, Duration, Utc};
use oprec_core::{Result, UnhandledKind, WorkerBeatParams, WorkerRecord};

use crate::{PgStore, backend_error};

/// A `workers` row as read.
type WorkerRow = (
    String,
    String,
    i64,
    Vec<String>,
    Option<String>,
    DateTime<Utc>,
    DateTime<Utc>,
);

impl PgStore {
    /// See [`OperatorStore::worker_beat`](oprec_core::OperatorStore::worker_beat).
    pub(crate) async fn beat(&self, p: WorkerBeatParams) -> Result<()> {
        let mut kinds = p.kinds;
        kinds.sort();
        kinds.dedup();
        sqlx::query(
            "INSERT INTO workers (id, host, pid, kinds, code_version, started_at, last_seen_at)
             VALUES ($2, $3, $4, $5, $6, $7, COALESCE($1, now()))
             ON CONFLICT (id) DO UPDATE SET host = excluded.host, pid = excluded.pid,
                 kinds = excluded.kinds, code_version = excluded.code_version,
                 started_at = excluded.started_at, last_seen_at = excluded.last_seen_at",
        )
        .bind(self.now_bind())
        .bind(&p.id)
        .bind(&p.host)
        .bind(i64::from(p.pid))
        .bind(kinds)
        .bind(&p.code_version)
        .bind(p.started_at)
        .execute(&self.pool)
        .await
        .map_err(backend_error)?;
        Ok(())
    }

    /// See [`OperatorStore::worker_remove`](oprec_core::OperatorStore::worker_remove).
    pub(crate) async fn remove_worker(&self, id: &str) -> Result<bool> {
        let done = sqlx::query("DELETE FROM workers WHERE id = $1")
            .bind(id)
            .execute(&self.pool)
            .await
            .map_err(backend_error)?;
        Ok(done.rows_affected() > 0)
    }

    /// See [`OperatorStore::worker_list`](oprec_core::OperatorStore::worker_list).
    pub(crate) async fn live_workers(&self, seen_within: Duration) -> Result<Vec<WorkerRecord>> {
        let rows: Vec<WorkerRow> = sqlx::query_as(
            "SELECT id, host, pid, kinds, code_version, started_at, last_seen_at FROM workers
             WHERE last_seen_at >= COALESCE($1, now()) - $2 * interval '1 microsecond'
             ORDER BY id",
        )
        .bind(self.now_bind())
        .bind(micros(seen_within))
        .fetch_all(&self.pool)
        .await
        .map_err(backend_error)?;
        Ok(rows
            .into_iter()
            .map(
                |(id, host, pid, kinds, code_version, started_at, last_seen_at)| WorkerRecord {
                    id,
                    host,
                    pid: u32::try_from(pid).unwrap_or(u32::MAX),
                    kinds,
                    code_version,
                    started_at,
                    last_seen_at,
                },
            )
            .collect())
    }

    /// See [`OperatorStore::operation_unhandled`](oprec_core::OperatorStore::operation_unhandled).
    pub(crate) async fn unhandled(&self, seen_within: Duration) -> Result<Vec<UnhandledKind>> {
        let rows: Vec<(String, i64, i64, DateTime<Utc>)> = sqlx::query_as(
            "SELECT o.kind, count(*),
                    count(*) FILTER (WHERE o.next_eligible_at <= COALESCE($1, now())),
                    min(o.created_at)
             FROM operations o
             WHERE o.status = 'pending'
               AND NOT EXISTS (
                   SELECT 1 FROM workers w
                   WHERE w.last_seen_at >= COALESCE($1, now()) - $2 * interval '1 microsecond'
                     AND o.kind = ANY (w.kinds))
             GROUP BY o.kind ORDER BY o.kind",
        )
        .bind(self.now_bind())
        .bind(micros(seen_within))
        .fetch_all(&self.pool)
        .await
        .map_err(backend_error)?;
        Ok(rows
            .into_iter()
            .map(|(kind, pending, eligible, oldest)| UnhandledKind {
                kind,
                pending: pending as u64,
                eligible: eligible as u64,
                oldest_created_at: oldest,
            })
            .collect())
    }
}

/// `d` in whole microseconds, for SQL interval arithmetic (saturating).
fn micros(d: Duration) -> i64 {
    d.num_microseconds().unwrap_or(i64::MAX)
}
