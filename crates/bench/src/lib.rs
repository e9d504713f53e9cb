//! oprec-bench: the benchmark behind `oprec bench`. It measures oprec on real services against the
//! same PostgreSQL doing the bare work with no oprec in the way (the ceiling), so that every figure
//! can be read as a fraction of what the database itself can do on this machine:
//!
//! - enqueue: batched through [`Client::enqueue_many`](oprec::Client::enqueue_many), and one
//!   operation per transaction from several producers;
//! - drain: pre-enqueued `demo.noop` operations worked to completion by a real worker *process*
//!   (`oprec worker --demo --exit-when-idle`), per worker concurrency and transport, with
//!   throughput, transactions committed per operation and the worker's peak memory;
//! - latency: enqueue → claim at a light steady rate, per transport;
//! - claim cost: the eligible claim with many finished rows in the table against a small table;
//! - on its own ([`stats_at_scale`]): `stats` with millions of finished rows and stale planner
//!   statistics, against the table counts it used to make;
//! - on its own ([`steady`]): enqueue and drain together at a steady rate, with retention,
//!   sampled over time (sizes, claim and `stats` latency, removals, retention's share).
//!
//! Every phase runs in a fresh schema (`oprec_bench_<uuid>`) of the given database, dropped
//! afterwards; Redis and AMQP phases use a fresh stream or queue, deleted afterwards too.
//!
//! Not here: argument parsing and printing to a terminal (the `oprec bench` command), or any
//! benchmark of SQLite.

mod ceiling;
mod claim_cost;
mod drain;
mod enqueue;
mod error;
mod latency;
mod limit_cost;
mod machine;
mod noop;
mod report;
mod schema;
mod stats_scale;
mod steady;
mod transport;
mod worker_process;

use std::path::PathBuf;

pub use ceiling::{Ceiling, CeilingRun, CeilingWork};
pub use claim_cost::ClaimCost;
pub use drain::Drain;
pub use enqueue::EnqueueRate;
pub use error::{Error, Result};
pub use latency::Latency;
pub use limit_cost::LimitCost;
pub use machine::Machine;
pub use report::{BenchReport, Settings, Verdict};
pub use stats_scale::{DEAD as STATS_DEAD, PENDING as STATS_PENDING, StatsScale};
pub use steady::{SteadyConfig, SteadyReport, SteadySample};

use crate::schema::Database;
use crate::transport::TransportSpec;

/// The program that works the drain and latency phases: usually the running `oprec` binary. The
/// benchmark appends `worker --demo --exit-when-idle --concurrency C` and passes the URLs in
/// `OPREC_DATABASE_URL` and `OPREC_TRANSPORT_URL` (not on the command line, where `ps` shows them).
#[derive(Clone, Debug)]
pub struct WorkerCommand {
    /// The executable.
    pub program: PathBuf,
    /// Arguments before the benchmark's own (none for `oprec`).
    pub args: Vec<String>,
}

/// What to measure, and how much. Its `Debug` masks the database password.
#[derive(Clone)]
pub struct BenchConfig {
    /// The PostgreSQL database (`postgres://...`); each phase gets a fresh schema in it.
    pub database_url: String,
    /// Operations per enqueue and drain phase.
    pub ops: u64,
    /// The worker's concurrencies (`--concurrency`): one drain phase per concurrency and
    /// transport; the latency phases run at the first.
    pub concurrencies: Vec<usize>,
    /// The transports to drain and measure latency with: `poll`, `redis://...`, `amqp://...`.
    pub transports: Vec<String>,
    /// Producers for the single-operation enqueues (one operation per transaction each).
    pub producers: usize,
    /// Operations enqueued one per transaction in that phase (0: `ops / 10`).
    pub single_ops: u64,
    /// Enqueues per second in the latency phase.
    pub latency_rate: u32,
    /// How long the latency phase enqueues, after a one-second warm-up.
    pub latency_secs: u64,
    /// Finished rows in the table for the claim-cost phase (0 skips the phase).
    pub finished_rows: u64,
    /// How long each ceiling run lasts, in seconds.
    pub ceiling_secs: u64,
    /// Timed rounds of the limit-cost phase (0 skips it and the limited drain).
    pub limit_samples: usize,
    /// The worker process.
    pub worker: WorkerCommand,
}

impl std::fmt::Debug for BenchConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let transports: Vec<String> = self
            .transports
            .iter()
            .map(|t| oprec::redact_url(t))
            .collect();
        f.debug_struct("BenchConfig")
            .field("database_url", &oprec::redact_url(&self.database_url))
            .field("ops", &self.ops)
            .field("concurrencies", &self.concurrencies)
            .field("transports", &transports)
            .field("producers", &self.producers)
            .field("single_ops", &self.single_ops)
            .field("latency_rate", &self.latency_rate)
            .field("latency_secs", &self.latency_secs)
            .field("finished_rows", &self.finished_rows)
            .field("ceiling_secs", &self.ceiling_secs)
            .field("limit_samples", &self.limit_samples)
            .field("worker", &self.worker)
            .finish()
    }
}

impl BenchConfig {
    /// The defaults for `database_url`, working with `worker`.
    pub fn new(database_url: impl Into<String>, worker: WorkerCommand) -> Self {
        BenchConfig {
            database_url: database_url.into(),
            ops: 100_000,
            concurrencies: vec![32, 1000],
            transports: vec!["poll".into()],
            producers: 8,
            single_ops: 0,
            latency_rate: 200,
            latency_secs: 5,
            finished_rows: 1_000_000,
            ceiling_secs: 3,
            limit_samples: 200,
            worker,
        }
    }

    fn check(&self) -> Result<Vec<TransportSpec>> {
        let bad = |m: &str| Err(Error::Invalid(m.to_owned()));
        if !matches!(
            self.database_url.split_once(':').map(|(s, _)| s),
            Some("postgres" | "postgresql")
        ) {
            return bad("the benchmark runs on PostgreSQL: pass a postgres:// database URL");
        }
        if self.ops == 0 {
            return bad("--ops must be at least 1");
        }
        if self.concurrencies.is_empty() || self.concurrencies.contains(&0) || self.producers == 0 {
            return bad("--concurrency and --producers must be at least 1");
        }
        if self.latency_rate == 0 || self.latency_secs == 0 {
            return bad("--latency-rate and --latency-secs must be at least 1");
        }
        if self.ceiling_secs == 0 {
            return bad("the ceiling needs at least one second");
        }
        if self.transports.is_empty() {
            return bad("name at least one transport (poll, redis://..., amqp://...)");
        }
        self.transports
            .iter()
            .map(|t| TransportSpec::parse(t))
            .collect()
    }
}

/// Runs every phase in order and returns the figures. `progress` receives one line per phase (and
/// per long step), for a terminal's stderr.
pub async fn run(config: &BenchConfig, progress: &(dyn Fn(&str) + Sync)) -> Result<BenchReport> {
    let transports = config.check()?;
    let db = Database::connect(&config.database_url).await?;
    let machine = machine::describe(&db).await?;
    progress(&format!(
        "machine: {} CPUs, {:.1} GiB, PostgreSQL {} (synchronous_commit={}, {})",
        machine.cpus,
        machine.memory_bytes as f64 / (1u64 << 30) as f64,
        machine.postgres_version,
        machine.synchronous_commit,
        machine.connection()
    ));

    if !db.checkpoints {
        progress(
            "no CHECKPOINT between phases (needs a superuser or the pg_checkpoint role): \
             a phase may pay for the pages the one before it left dirty",
        );
    }
    let ceiling = ceiling::measure(
        &db,
        CeilingWork::LifeCycle,
        config.ceiling_secs,
        config.ops,
        progress,
    )
    .await?;
    let claim_ceiling = ceiling::measure(
        &db,
        CeilingWork::ClaimComplete,
        config.ceiling_secs,
        config.ops,
        progress,
    )
    .await?;
    let enqueue_batched = enqueue::batched(&db, config.ops, progress).await?;
    let single_ops = if config.single_ops == 0 {
        (config.ops / 10).max(100)
    } else {
        config.single_ops
    };
    let single_ceiling =
        ceiling::measure_single_commits(&db, config.producers, config.ceiling_secs, progress)
            .await?;
    let enqueue_single = enqueue::single(&db, single_ops, config.producers, progress).await?;
    let mut drains = Vec::new();
    for &concurrency in &config.concurrencies {
        for t in &transports {
            drains.push(drain::measure(&db, config, concurrency, t, false, progress).await?);
        }
    }
    let limit_cost = if config.limit_samples > 0 {
        // The first drain again, under limits with room for everything: what the limits' lock,
        // count and window writes cost a worker's whole drain.
        drains.push(
            drain::measure(
                &db,
                config,
                config.concurrencies[0],
                &transports[0],
                true,
                progress,
            )
            .await?,
        );
        Some(limit_cost::measure(&db, config.limit_samples, progress).await?)
    } else {
        None
    };
    let mut latencies = Vec::new();
    for t in &transports {
        latencies.push(latency::measure(&db, config, t, progress).await?);
    }
    let claim_cost = if config.finished_rows > 0 {
        Some(claim_cost::measure(&db, config.finished_rows, progress).await?)
    } else {
        None
    };
    db.close().await;
    Ok(BenchReport::new(
        machine,
        config,
        ceiling,
        claim_ceiling,
        single_ceiling,
        enqueue_batched,
        enqueue_single,
        drains,
        latencies,
        claim_cost,
        limit_cost,
    ))
}

/// `stats` with `finished_rows` finished operations and `pending_rows` waiting ones in a fresh
/// schema of `database_url`, the planner's statistics left stale; see [`StatsScale`].
pub async fn stats_at_scale(
    database_url: &str,
    finished_rows: u64,
    pending_rows: u64,
    progress: &(dyn Fn(&str) + Sync),
) -> Result<StatsScale> {
    let db = Database::connect(database_url).await?;
    let r = stats_scale::measure(&db, finished_rows, pending_rows, progress).await;
    db.close().await;
    r
}

/// The steady run in a fresh schema of `database_url`; see [`SteadyReport`].
pub async fn steady(
    database_url: &str,
    config: &SteadyConfig,
    progress: &(dyn Fn(&str) + Sync),
) -> Result<SteadyReport> {
    let db = Database::connect(database_url).await?;
    let r = steady::measure(&db, config, progress).await;
    db.close().await;
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(url: &str) -> BenchConfig {
        BenchConfig::new(
            url,
            WorkerCommand {
                program: "oprec".into(),
                args: Vec::new(),
            },
        )
    }

    #[test]
    fn settings_are_checked_before_anything_runs() {
        assert!(config("postgres://u@h/db").check().is_ok());
        let refuse = |c: BenchConfig, needle: &str| {
            let e = c.check().unwrap_err();
            assert!(
                e.is_invalid_input() && e.to_string().contains(needle),
                "{e}"
            );
        };
        refuse(config("sqlite://x.db"), "PostgreSQL");
        refuse(
            BenchConfig {
                ops: 0,
                ..config("postgres://h/db")
            },
            "--ops",
        );
        refuse(
            BenchConfig {
                transports: vec!["kafka://h".into()],
                ..config("postgres://h/db")
            },
            "unsupported transport",
        );
        refuse(
            BenchConfig {
                transports: Vec::new(),
                ..config("postgres://h/db")
            },
            "at least one transport",
        );
    }
}
