//! Drain: `ops` pre-enqueued `demo.noop` operations worked to completion by a worker process, per
//! transport. Throughput is measured in the database, from the first claim to the last success,
//! and every operation is checked succeeded afterwards; the database's cost is the transactions it
//! committed per operation while the worker ran.

use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;

use crate::enqueue::{BATCH_PRODUCERS, fill};
use crate::schema::{Database, Schema, with_schema};
use crate::transport::TransportSpec;
use crate::worker_process::WorkerProcess;
use crate::{BenchConfig, Error, Result, noop};
use crate::{limit_cost, machine};

/// One transport's drain.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Drain {
    /// `poll`, `redis` or `amqp`.
    pub transport: String,
    /// Operations drained.
    pub ops: u64,
    /// The worker's concurrency.
    pub concurrency: usize,
    /// Whether the drain ran under limits with room for everything (a running limit on the
    /// kind and a rate on its dependency, both of a million): what enforcing limits costs.
    pub limited: bool,
    /// Seconds taken to enqueue them (and, with a broker, publish their wake-ups).
    pub enqueue_seconds: f64,
    /// Seconds from the first claim to the last success.
    pub seconds: f64,
    /// `ops / seconds`.
    pub ops_per_sec: f64,
    /// Attempts recorded in `operation_attempts` (the full history: one per operation).
    pub attempts: u64,
    /// Transactions the database committed while the worker ran (`pg_stat_database`; includes
    /// the worker's start-up and idle checks, and anything else using the database meanwhile).
    pub commits: i64,
    /// `commits / ops`.
    pub commits_per_op: f64,
    /// The worker process's peak resident memory (`VmHWM`), in bytes.
    pub worker_peak_rss_bytes: u64,
    /// Bytes of write-ahead log written while the worker ran, per operation: the row versions,
    /// index entries, history and counts the database wrote for each (with the first change of
    /// each page after the checkpoint that starts the phase written whole). Counts every
    /// session's writes, as `commits` does; on a machine otherwise quiet it does not depend on
    /// the machine's speed, so two builds compare by it even when their throughputs move.
    pub wal_bytes_per_op: f64,
    /// The machine's busy CPU while the worker ran (`/proc/stat`: every process, PostgreSQL and
    /// the worker included; time stolen by the hypervisor left out), in microseconds per
    /// operation, start-up and idle checks included. `None` where `/proc/stat` is not readable.
    pub cpu_us_per_op: Option<f64>,
}

impl Drain {
    /// [`Drain::cpu_us_per_op`] as printed: whole microseconds, or `?` when not measured.
    pub(crate) fn cpu_us_per_op_text(&self) -> String {
        self.cpu_us_per_op
            .map_or("?".to_owned(), |c| format!("{c:.0}"))
    }
}

/// What the database says about a finished drain.
struct Outcome {
    succeeded: i64,
    total: i64,
    attempts: i64,
    seconds: f64,
}

async fn outcome(s: &Schema) -> Result<Outcome> {
    let (succeeded, total): (i64, i64) = sqlx::query_as(
        "SELECT count(*) FILTER (WHERE status = 'succeeded'), count(*) FROM operations",
    )
    .fetch_one(&s.pool)
    .await?;
    let (attempts, seconds): (i64, Option<f64>) = sqlx::query_as(
        "SELECT count(*), extract(epoch FROM max(ended_at) - min(claimed_at))::float8
         FROM operation_attempts",
    )
    .fetch_one(&s.pool)
    .await?;
    Ok(Outcome {
        succeeded,
        total,
        attempts,
        seconds: seconds.unwrap_or(0.0),
    })
}

pub(crate) async fn measure(
    db: &Database,
    config: &BenchConfig,
    concurrency: usize,
    spec: &TransportSpec,
    limited: bool,
    progress: &(dyn Fn(&str) + Sync),
) -> Result<Drain> {
    let ops = config.ops;
    let label = if limited {
        format!("{}, limited", spec.label())
    } else {
        spec.label().to_owned()
    };
    let label = label.as_str();
    let drain = with_schema(db, 4, true, async |s| {
        let phase = spec.fresh(concurrency);
        let result = async {
            let client = noop::client(Arc::new(s.store.clone()), phase.connect()?)?;
            let enqueue_seconds = fill(&client, ops, BATCH_PRODUCERS).await?;
            drop(client);
            if limited {
                limit_cost::roomy_limits(s).await?;
            }
            progress(&format!(
                "drain {label}: {ops} operations enqueued in {enqueue_seconds:.1} s; starting the worker process"
            ));
            db.checkpoint().await;
            let before = db.commits().await?;
            let wal_before = db.wal_position().await?;
            let cpu_before = machine::busy_cpu_seconds();
            let worker = WorkerProcess::spawn(&config.worker, &s.url, &phase.url, concurrency, true)?;
            let exited = worker
                .wait(Duration::from_secs(120 + ops / 100))
                .await?;
            let cpu = cpu_before.zip(machine::busy_cpu_seconds()).map(|(a, b)| b - a);
            let wal_bytes = db.wal_bytes_since(&wal_before).await?;
            // A backend sends its statistics when its connection closes; give them a moment.
            tokio::time::sleep(Duration::from_millis(1500)).await;
            let commits = db.commits().await? - before;
            let o = outcome(s).await?;
            if o.succeeded != ops as i64 || o.total != ops as i64 || o.seconds <= 0.0 {
                return Err(Error::Check(format!(
                    "after the {label} drain {} of {} operations succeeded (expected {ops}); worker said: {}",
                    o.succeeded,
                    o.total,
                    exited.stdout.trim()
                )));
            }
            if o.attempts != ops as i64 {
                return Err(Error::Check(format!(
                    "the {label} drain recorded {} attempts for {ops} operations that each succeeded at once",
                    o.attempts
                )));
            }
            Ok(Drain {
                transport: spec.label().to_owned(),
                ops,
                concurrency,
                limited,
                enqueue_seconds,
                seconds: o.seconds,
                ops_per_sec: ops as f64 / o.seconds,
                attempts: o.attempts as u64,
                commits,
                commits_per_op: commits as f64 / ops as f64,
                worker_peak_rss_bytes: exited.peak_rss_bytes,
                wal_bytes_per_op: wal_bytes / ops as f64,
                cpu_us_per_op: cpu.map(|c| c * 1e6 / ops as f64),
            })
        }
        .await;
        let cleaned = phase.clean_up().await;
        let drain = result?;
        cleaned?;
        Ok(drain)
    })
    .await?;
    progress(&format!(
        "drain {label}: {:.0} ops/s ({} operations in {:.2} s, concurrency {}), {:.3} commits/op, {:.0} WAL bytes/op, {} CPU µs/op, worker peak {:.1} MiB",
        drain.ops_per_sec,
        drain.ops,
        drain.seconds,
        drain.concurrency,
        drain.commits_per_op,
        drain.wal_bytes_per_op,
        drain.cpu_us_per_op_text(),
        drain.worker_peak_rss_bytes as f64 / (1u64 << 20) as f64
    ));
    Ok(drain)
}
