//! `stats` at scale: how long [`OperatorStore::stats`](oprec::OperatorStore::stats) takes with
//! many finished rows in the table and the planner's statistics stale (rows bulk-inserted, never
//! analyzed, autovacuum off on both tables), against the table counts the figures were made of
//! before the store kept its counts (`count(*) ... GROUP BY status` and the attempts join).

use std::time::Instant;

use oprec::{EnqueueOptions, EnqueueStore, NewOperation, OperatorStore};
use serde::Serialize;
use sqlx::Executor;

use crate::claim_cost::add_finished;
use crate::schema::{Database, Schema, with_schema};
use crate::{Result, noop};

/// Finished rows per bulk insert statement.
const CHUNK: u64 = 500_000;
/// Pending operations beside the finished ones (a live backlog), unless the run names another
/// number.
pub const PENDING: u64 = 10_000;
/// Pending operations per insert statement.
const PENDING_CHUNK: u64 = 1_000;
/// Timed `stats` calls (after one untimed).
const SAMPLES: usize = 10;
/// Timed table counts.
const SCANS: usize = 3;

/// `stats` against the table's size.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StatsScale {
    /// Finished rows in the table (each with one attempt).
    pub finished_rows: u64,
    /// Pending rows beside them.
    pub pending_rows: u64,
    /// Whether the tables were analyzed before measuring (never: statistics are stale).
    pub analyzed: bool,
    /// Median `stats` call, in milliseconds.
    pub stats_median_ms: f64,
    /// Slowest `stats` call, in milliseconds.
    pub stats_max_ms: f64,
    /// Median of the counts `stats` made before (by status over the table, attempts per
    /// success by joining the attempts), in milliseconds.
    pub table_count_median_ms: f64,
    /// Median of the backlog by age counted as `stats` counted it before migration 0020 (every
    /// waiting row read and bucketed), in milliseconds, timed in the same transaction settings.
    pub backlog_rows_median_ms: f64,
    /// Seconds spent filling the table.
    pub fill_seconds: f64,
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

/// The counts `stats` made over the whole table before the kept counts, timed once.
async fn table_count(s: &Schema) -> Result<f64> {
    let started = Instant::now();
    s.pool
        .execute("SELECT status, count(*) FROM operations GROUP BY status")
        .await?;
    s.pool
        .execute(
            "SELECT (SELECT count(*) FROM operation_attempts a JOIN operations o \
                     ON o.id = a.operation_id \
                     WHERE o.status = 'succeeded' AND a.outcome <> 'snoozed'), \
                    (SELECT count(*) FROM operations WHERE status = 'succeeded')",
        )
        .await?;
    Ok(started.elapsed().as_secs_f64() * 1000.0)
}

/// The backlog by age as `stats` counted it before the counts per creation slot (every waiting
/// row read), timed once, under the figures' planner settings.
async fn backlog_rows_count(s: &Schema) -> Result<f64> {
    let mut tx = s.pool.begin().await?;
    tx.execute("SET LOCAL enable_seqscan = off").await?;
    tx.execute("SET LOCAL jit = off").await?;
    let started = Instant::now();
    tx.execute(
        "SELECT CASE WHEN created_at >= now() - interval '1 hour' THEN '<1h' \
                     WHEN created_at >= now() - interval '1 day' THEN '1h-1d' \
                     WHEN created_at >= now() - interval '7 days' THEN '1d-7d' \
                     ELSE '>7d' END, count(*) \
         FROM operations WHERE status IN ('pending', 'running', 'reconciling', 'held') \
         GROUP BY 1",
    )
    .await?;
    let ms = started.elapsed().as_secs_f64() * 1000.0;
    tx.rollback().await?;
    Ok(ms)
}

/// Fills a fresh schema with `finished_rows` finished and `pending` waiting operations and
/// measures.
pub(crate) async fn measure(
    db: &Database,
    finished_rows: u64,
    pending: u64,
    progress: &(dyn Fn(&str) + Sync),
) -> Result<StatsScale> {
    with_schema(db, 2, true, async |s| {
        for table in ["operations", "operation_attempts"] {
            s.pool
                .execute(sqlx::AssertSqlSafe(format!(
                    "ALTER TABLE {table} SET (autovacuum_enabled = off)"
                )))
                .await?;
        }
        let started = Instant::now();
        let mut at = 0;
        while at < finished_rows {
            let to = (at + CHUNK).min(finished_rows);
            add_finished(s, at, to).await?;
            db.checkpoint().await;
            at = to;
            progress(&format!("stats at scale: {at} finished rows"));
        }
        let policy = noop::policy()?;
        let now = chrono::Utc::now();
        for chunk in 0..pending.div_ceil(PENDING_CHUNK) {
            let ops = (chunk * PENDING_CHUNK..((chunk + 1) * PENDING_CHUNK).min(pending))
                .map(|n| {
                    NewOperation::new(
                        noop::KIND,
                        noop::payload(n),
                        &policy,
                        EnqueueOptions::default(),
                        now,
                    )
                })
                .collect::<oprec::Result<Vec<_>>>()?;
            s.store.operation_insert_many(ops).await?;
        }
        let fill_seconds = started.elapsed().as_secs_f64();
        s.store.stats().await?;
        let mut times = Vec::with_capacity(SAMPLES);
        for _ in 0..SAMPLES {
            let t = Instant::now();
            let r = s.store.stats().await?;
            times.push(t.elapsed().as_secs_f64() * 1000.0);
            let total: u64 = r.by_status.values().sum();
            if total != finished_rows + pending {
                return Err(crate::Error::Check(format!(
                    "stats counted {total} operations, not {}",
                    finished_rows + pending
                )));
            }
            let waiting: u64 = r.backlog_by_age.values().sum();
            if waiting != pending {
                return Err(crate::Error::Check(format!(
                    "stats counted a backlog of {waiting} operations, not {pending}"
                )));
            }
        }
        let stats_max_ms = times.iter().copied().fold(0.0, f64::max);
        let stats_median_ms = median(times);
        progress(&format!(
            "stats at scale: stats in {stats_median_ms:.1} ms (median of {SAMPLES}; slowest {stats_max_ms:.1} ms) with {finished_rows} finished rows; timing the table counts"
        ));
        let mut scans = Vec::with_capacity(SCANS);
        for _ in 0..SCANS {
            scans.push(table_count(s).await?);
        }
        let table_count_median_ms = median(scans);
        progress(&format!(
            "stats at scale: the table counts take {table_count_median_ms:.0} ms"
        ));
        let mut backlog = Vec::with_capacity(SCANS);
        for _ in 0..SCANS {
            backlog.push(backlog_rows_count(s).await?);
        }
        let backlog_rows_median_ms = median(backlog);
        Ok(StatsScale {
            finished_rows,
            pending_rows: pending,
            analyzed: false,
            stats_median_ms,
            stats_max_ms,
            table_count_median_ms,
            backlog_rows_median_ms,
            fill_seconds,
        })
    })
    .await
}
