//! The steady run: operations enqueued at a steady rate and drained together by a worker (in this
//! process, poll-only, the maintenance leader) whose retention keeps succeeded operations for a
//! short age, sampled at a fixed interval: the table's and indexes' sizes, the claim's and
//! `stats`' latency, the rows retention removed per second, and retention's share of the row
//! writes on `operations` and `operation_attempts` (from `pg_stat_user_tables`). If retention
//! keeps up, every figure stays flat once the first age has passed.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use oprec::runtime::RetentionConfig;
use oprec::store::{ClaimEligibleParams, Claimant, CompleteParams};
use oprec::{
    EnqueueOptions, EnqueueStore, FullStore, NewOperation, OperatorStore, Retention,
    RetentionPolicy, Transition, Worker, WorkerConfig, WorkerStore,
};
use serde::Serialize;
use sqlx::Row;
use tokio_util::sync::CancellationToken;

use crate::schema::{Database, Schema, with_schema};
use crate::{Error, Result, noop};

/// A kind no worker runs: the claim probe's own operations.
const PROBE: &str = "bench.probe";
/// Operations per probe claim.
const PROBE_LIMIT: u32 = 100;
/// Probe claims and `stats` calls per sample.
const PROBES: usize = 5;
/// Enqueue batches per second.
const TICKS: u32 = 10;

/// What the steady run does.
#[derive(Clone, Debug)]
pub struct SteadyConfig {
    /// How long it enqueues and drains.
    pub duration: Duration,
    /// Operations enqueued per second.
    pub rate: u32,
    /// How long succeeded operations are kept.
    pub retain: chrono::Duration,
    /// How often it samples.
    pub sample_every: Duration,
    /// The worker's concurrency.
    pub concurrency: usize,
}

/// One sample.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SteadySample {
    /// Seconds since the start.
    pub at_seconds: f64,
    /// Operations in the table (the kept counts).
    pub operations: u64,
    /// Pending operations (the backlog).
    pub pending: u64,
    /// `operations`' heap, in bytes.
    pub table_bytes: i64,
    /// `operations`' indexes, in bytes.
    pub index_bytes: i64,
    /// `operation_attempts` with its indexes, in bytes.
    pub attempts_bytes: i64,
    /// Median claim of 100, in milliseconds.
    pub claim_ms: f64,
    /// Median `stats`, in milliseconds.
    pub stats_ms: f64,
    /// Operations enqueued per second since the last sample.
    pub enqueued_per_second: f64,
    /// Operations removed by retention per second since the last sample.
    pub removed_per_second: f64,
    /// Retention's deletes as a share of all row writes (inserts, updates, deletes) on
    /// `operations` and `operation_attempts` since the last sample.
    pub retention_write_share: f64,
}

/// The steady run's figures.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SteadyReport {
    /// Seconds it ran.
    pub seconds: u64,
    /// The rate asked for.
    pub rate: u32,
    /// Seconds succeeded operations were kept.
    pub retain_seconds: i64,
    /// The worker's concurrency.
    pub concurrency: usize,
    /// The samples, oldest first.
    pub samples: Vec<SteadySample>,
    /// Operations enqueued.
    pub enqueued: u64,
    /// Operations removed by retention.
    pub removed: u64,
}

/// Row writes on the two tables, and the deletes among them.
#[derive(Clone, Copy, Default)]
struct Writes {
    all: i64,
    deleted_operations: i64,
    deleted: i64,
}

async fn writes(s: &Schema) -> Result<Writes> {
    let rows = sqlx::query(
        "SELECT relname, n_tup_ins + n_tup_upd + n_tup_del AS all_writes, n_tup_del
         FROM pg_stat_user_tables
         WHERE schemaname = $1 AND relname IN ('operations', 'operation_attempts')",
    )
    .bind(&s.name)
    .fetch_all(&s.pool)
    .await?;
    let mut w = Writes::default();
    for r in rows {
        let name: String = r.try_get("relname")?;
        let del: i64 = r.try_get("n_tup_del")?;
        w.all += r.try_get::<i64, _>("all_writes")?;
        w.deleted += del;
        if name == "operations" {
            w.deleted_operations = del;
        }
    }
    Ok(w)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

/// The median of [`PROBES`] claims of [`PROBE_LIMIT`] fresh probe operations, each completed.
async fn claim_ms(s: &Schema) -> Result<f64> {
    let policy = noop::policy()?;
    let claimant = Claimant {
        worker_id: "bench-probe".into(),
        code_version: None,
        lease: chrono::Duration::seconds(30),
    };
    let mut times = Vec::with_capacity(PROBES);
    for _ in 0..PROBES {
        let now = chrono::Utc::now() - chrono::Duration::seconds(1);
        let ops = (0..PROBE_LIMIT)
            .map(|n| {
                NewOperation::new(
                    PROBE,
                    noop::payload(u64::from(n)),
                    &policy,
                    EnqueueOptions::default(),
                    now,
                )
            })
            .collect::<oprec::Result<Vec<_>>>()?;
        s.store.operation_insert_many(ops).await?;
        let t = Instant::now();
        let claimed = s
            .store
            .operation_claim_eligible(ClaimEligibleParams {
                above_default_only: false,
                kinds: vec![PROBE.to_owned()],
                limit: PROBE_LIMIT,
                claimant: claimant.clone(),
            })
            .await?;
        times.push(t.elapsed().as_secs_f64() * 1000.0);
        let done = claimed
            .into_iter()
            .map(|o| CompleteParams {
                id: o.id,
                claim_token: o.claim_token(),
                transition: Transition::succeeded(None),
            })
            .collect();
        s.store.operation_complete_many(done).await?;
    }
    Ok(median(times))
}

/// The median of [`PROBES`] `stats` calls, with the operations and the backlog it counted.
async fn stats_ms(s: &Schema) -> Result<(f64, u64, u64)> {
    let mut times = Vec::with_capacity(PROBES);
    let mut last = None;
    for _ in 0..PROBES {
        let t = Instant::now();
        last = Some(s.store.stats().await?);
        times.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    let r = last.unwrap_or_default();
    let pending = r
        .by_status
        .get(&oprec::Status::Pending)
        .copied()
        .unwrap_or(0);
    Ok((median(times), r.by_status.values().sum(), pending))
}

async fn sizes(s: &Schema) -> Result<(i64, i64, i64)> {
    let r = sqlx::query(
        "SELECT pg_table_size('operations') AS t, pg_indexes_size('operations') AS i,
                pg_total_relation_size('operation_attempts') AS a",
    )
    .fetch_one(&s.pool)
    .await?;
    Ok((r.try_get("t")?, r.try_get("i")?, r.try_get("a")?))
}

/// Enqueues `rate` operations per second until `stop`, counting them in `count`; returns how
/// many.
async fn enqueue(
    store: Arc<dyn FullStore>,
    rate: u32,
    count: Arc<AtomicU64>,
    stop: CancellationToken,
) -> Result<u64> {
    let policy = noop::policy()?;
    let per_tick = u64::from(rate.div_ceil(TICKS).max(1));
    let mut tick = tokio::time::interval(Duration::from_secs(1) / TICKS);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut n = 0u64;
    loop {
        tokio::select! {
            _ = stop.cancelled() => return Ok(n),
            _ = tick.tick() => {}
        }
        let now = chrono::Utc::now();
        let ops = (0..per_tick)
            .map(|i| {
                NewOperation::new(
                    noop::KIND,
                    noop::payload(n + i),
                    &policy,
                    EnqueueOptions::default(),
                    now,
                )
            })
            .collect::<oprec::Result<Vec<_>>>()?;
        store.operation_insert_many(ops).await?;
        n += per_tick;
        count.store(n, Ordering::Relaxed);
    }
}

/// Runs the steady phase in a fresh schema.
pub(crate) async fn measure(
    db: &Database,
    config: &SteadyConfig,
    progress: &(dyn Fn(&str) + Sync),
) -> Result<SteadyReport> {
    if config.rate == 0 || config.sample_every.is_zero() {
        return Err(Error::Invalid(
            "the steady run needs a rate and a sample interval above zero".into(),
        ));
    }
    with_schema(db, 16, true, async |s| {
        let store: Arc<dyn FullStore> = Arc::new(s.store.clone());
        let worker = Worker::new(
            store.clone(),
            None,
            Arc::new(noop::registry()?),
            WorkerConfig {
                concurrency: config.concurrency,
                worker_id: "bench-steady".into(),
                retention: RetentionConfig {
                    policy: RetentionPolicy {
                        default: Retention::both(config.retain),
                        ..RetentionPolicy::default()
                    },
                    interval: Duration::from_secs(5),
                    ..RetentionConfig::default()
                },
                ..WorkerConfig::default()
            },
        );
        let stop = CancellationToken::new();
        let worker = tokio::spawn(worker.run(stop.clone()));
        let count = Arc::new(AtomicU64::new(0));
        let enqueuer = tokio::spawn(enqueue(
            store.clone(),
            config.rate,
            count.clone(),
            stop.clone(),
        ));
        let started = Instant::now();
        let mut samples = Vec::new();
        let mut before = writes(s).await?;
        let mut enqueued_before = 0u64;
        let mut last = Instant::now();
        let mut next = started + config.sample_every;
        let first_writes = before;
        while started.elapsed() < config.duration {
            tokio::time::sleep_until(next.into()).await;
            next += config.sample_every;
            let (claim, (stats, operations, pending)) = (claim_ms(s).await?, stats_ms(s).await?);
            let (table_bytes, index_bytes, attempts_bytes) = sizes(s).await?;
            let now = writes(s).await?;
            let secs = last.elapsed().as_secs_f64();
            last = Instant::now();
            let d_all = (now.all - before.all).max(1) as f64;
            let enqueued_now = count.load(Ordering::Relaxed);
            let sample = SteadySample {
                at_seconds: started.elapsed().as_secs_f64().round(),
                operations,
                pending,
                table_bytes,
                index_bytes,
                attempts_bytes,
                claim_ms: claim,
                stats_ms: stats,
                enqueued_per_second: (enqueued_now - enqueued_before) as f64 / secs,
                removed_per_second: (now.deleted_operations - before.deleted_operations) as f64
                    / secs,
                retention_write_share: (now.deleted - before.deleted) as f64 / d_all,
            };
            progress(&format!(
                "steady: {:>5.0} s  {} operations ({} pending)  table {} MB + indexes {} MB, attempts {} MB  claim {:.2} ms  stats {:.2} ms  removed {:.0}/s  retention {:.1}% of row writes",
                sample.at_seconds,
                sample.operations,
                sample.pending,
                table_bytes / 1_000_000,
                index_bytes / 1_000_000,
                attempts_bytes / 1_000_000,
                claim,
                stats,
                sample.removed_per_second,
                sample.retention_write_share * 100.0
            ));
            enqueued_before = enqueued_now;
            before = now;
            samples.push(sample);
        }
        stop.cancel();
        let enqueued = enqueuer
            .await
            .map_err(|e| Error::Check(format!("the enqueuer panicked: {e}")))??;
        worker
            .await
            .map_err(|e| Error::Check(format!("the worker panicked: {e}")))?;
        let end = writes(s).await?;
        Ok(SteadyReport {
            seconds: started.elapsed().as_secs(),
            rate: config.rate,
            retain_seconds: config.retain.num_seconds(),
            concurrency: config.concurrency,
            samples,
            enqueued,
            removed: (end.deleted_operations - first_writes.deleted_operations).max(0) as u64,
        })
    })
    .await
}
