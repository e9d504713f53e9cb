//! `stats` at scale: how long [`OperatorStore::stats`](oprec::OperatorStore::stats) takes with
//! many finished rows in the table and the planner's statistics stale (rows bulk-inserted, never
//! analyzed, autovacuum off on both tables), against the table counts the figures were made of
//! before the store kept its counts (`count(*) ... GROUP BY status` and the attempts join). Then
//! a mass death, as after an outage: the newest finished rows turned dead, still never analyzed,
//! and the operator's statements timed on it (the re-drive's dry run, a quarantine's count, the
//! dead listing, and a re-drive as new of them all).

use std::time::Instant;

use oprec::operator::{
    CountMatchingParams, OperationFilter, RedriveMode, RedriveParams, RedrivePreviewParams,
};
use oprec::store::ListParams;
use oprec::{EnqueueOptions, EnqueueStore, NewOperation, OperatorStore, Status, Store};
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
/// Finished rows turned dead for the operator's statements (a mass death), or every finished
/// row of a smaller table.
pub const DEAD: u64 = 5_000;
/// Operations per re-drive batch, as `oprec redrive` takes them.
const REDRIVE_BATCH: u32 = 1_000;

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
    /// Finished rows turned dead before the operator's statements were timed.
    pub dead_rows: u64,
    /// Median re-drive dry run over every dead operation (groups, samples, distinct errors), ms.
    pub redrive_review_median_ms: f64,
    /// Median count of what a quarantine of the kind would match, per status (every row of the
    /// kind: the dead ones are checked), in milliseconds.
    pub quarantine_count_median_ms: f64,
    /// Median first page (50, newest first) of `ops list --status dead`, ms.
    pub dead_list_median_ms: f64,
    /// One re-drive as new of every dead operation, in batches of 1,000, in milliseconds.
    pub redrive_as_new_ms: f64,
    /// Seconds spent filling the table.
    pub fill_seconds: f64,
}

/// The operator's statements on a mass death, statistics stale.
struct Operator {
    redrive_review_median_ms: f64,
    quarantine_count_median_ms: f64,
    dead_list_median_ms: f64,
    redrive_as_new_ms: f64,
}

/// Times `call` [`SCANS`] times; the median, in milliseconds.
async fn timed<T>(mut call: impl AsyncFnMut() -> Result<T>) -> Result<f64> {
    let mut times = Vec::with_capacity(SCANS);
    for _ in 0..SCANS {
        let t = Instant::now();
        call().await?;
        times.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    Ok(median(times))
}

/// Turns the newest `dead` finished rows dead (a permanent failure, one error text), as a mass
/// death leaves them, and times the operator's statements on them.
async fn operator_statements(s: &Schema, dead: u64) -> Result<Operator> {
    s.pool
        .execute(sqlx::AssertSqlSafe(format!(
            "UPDATE operations SET status = 'dead', terminal_reason = 'permanent', \
             last_failure_class = 'permanent', \
             last_error = '{{\"summary\": \"provider refused the request\"}}' \
             WHERE id IN (SELECT id FROM operations WHERE status = 'succeeded' \
                          ORDER BY id DESC LIMIT {dead})"
        )))
        .await?;
    let store = &s.store;
    let redrive_review_median_ms = timed(async || {
        let p = store
            .redrive_preview(RedrivePreviewParams {
                filter: OperationFilter::default(),
                include_cancelled: false,
                samples: 8,
            })
            .await?;
        check(p.matched, dead, "the re-drive's dry run")
    })
    .await?;
    let quarantine_count_median_ms = timed(async || {
        let c = store
            .operation_count_matching(CountMatchingParams {
                filter: OperationFilter {
                    kinds: vec![noop::KIND.to_owned()],
                    ..OperationFilter::default()
                },
            })
            .await?;
        check(
            c.get(&Status::Dead).copied().unwrap_or(0),
            dead,
            "the quarantine's count",
        )
    })
    .await?;
    let dead_list_median_ms = timed(async || {
        let l = store
            .operation_list(ListParams {
                status: Some(Status::Dead),
                newest_first: true,
                limit: 50,
                ..ListParams::default()
            })
            .await?;
        check(l.len() as u64, dead.min(50), "the dead listing")
    })
    .await?;
    let started = Instant::now();
    let mut copied = 0;
    loop {
        let batch = store
            .operation_redrive(RedriveParams {
                filter: OperationFilter::default(),
                include_cancelled: false,
                mode: RedriveMode::AsNew { deadline: None },
                limit: REDRIVE_BATCH,
                start_at: chrono::Utc::now(),
                spacing: chrono::Duration::zero(),
                skip_held_back: false,
            })
            .await?;
        if batch.is_empty() {
            break;
        }
        copied += batch.len() as u64;
    }
    let redrive_as_new_ms = started.elapsed().as_secs_f64() * 1000.0;
    check(copied, dead, "the re-drive as new")?;
    Ok(Operator {
        redrive_review_median_ms,
        quarantine_count_median_ms,
        dead_list_median_ms,
        redrive_as_new_ms,
    })
}

fn check(got: u64, want: u64, what: &str) -> Result<()> {
    if got == want {
        Ok(())
    } else {
        Err(crate::Error::Check(format!(
            "{what} found {got} operations, not {want}"
        )))
    }
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
        let dead = DEAD.min(finished_rows);
        progress(&format!(
            "stats at scale: {dead} operations die at once; timing the operator's statements"
        ));
        let op = operator_statements(s, dead).await?;
        Ok(StatsScale {
            finished_rows,
            pending_rows: pending,
            analyzed: false,
            stats_median_ms,
            stats_max_ms,
            table_count_median_ms,
            backlog_rows_median_ms,
            dead_rows: dead,
            redrive_review_median_ms: op.redrive_review_median_ms,
            quarantine_count_median_ms: op.quarantine_count_median_ms,
            dead_list_median_ms: op.dead_list_median_ms,
            redrive_as_new_ms: op.redrive_as_new_ms,
            fill_seconds,
        })
    })
    .await
}
