//! `oprec bench`: runs the benchmark of `oprec-bench` against PostgreSQL (and the brokers named
//! by `--transports`), with one progress line per phase on stderr, and prints the table (or the
//! JSON report). The drain and latency phases run this very binary as the worker process.

use std::path::PathBuf;

use clap::Args;
use oprec_bench::{BenchConfig, WorkerCommand};

use crate::cli::Global;
use crate::exit::bad;
use crate::output;

/// `oprec bench`.
#[derive(Debug, Args)]
#[command(
    long_about = "Benchmark oprec against PostgreSQL's own ceiling on this machine: \
batched and single enqueues, the drain of N operations by a worker process per concurrency and \
transport, \
enqueue → claim latency at a light steady rate, transactions committed per operation, the \
worker's peak memory, and the claim's cost with many finished rows. Every phase runs in a fresh \
schema `oprec_bench_<uuid>` of --database-url (which must be PostgreSQL), dropped afterwards; \
brokers get a fresh stream or queue. Every throughput is also given as a fraction of the \
ceiling: the same database doing the bare insert → claim → complete work with no oprec; each \
drain also as a fraction of the bare claim → complete of a full table."
)]
pub(crate) struct BenchArgs {
    /// Operations per enqueue and drain phase.
    #[arg(long, value_name = "N", default_value_t = 100_000)]
    pub ops: u64,
    /// The worker's concurrencies, comma-separated: one drain phase per concurrency and transport;
    /// the latency phases run at the first.
    #[arg(
        long,
        value_name = "C,...",
        value_delimiter = ',',
        default_value = "32,1000"
    )]
    pub concurrency: Vec<usize>,
    /// The transports to drain with and measure latency on, comma-separated: `poll`,
    /// `redis://HOST`, `amqp://HOST`.
    #[arg(
        long,
        value_name = "URL,...",
        value_delimiter = ',',
        default_value = "poll"
    )]
    pub transports: Vec<String>,
    /// Producers of single-operation enqueues (one operation per transaction each).
    #[arg(long, value_name = "P", default_value_t = 8)]
    pub producers: usize,
    /// Enqueues per second in the latency phase.
    #[arg(long, value_name = "PER_SECOND", default_value_t = 200)]
    pub latency_rate: u32,
    /// Seconds the latency phase measures (after a one-second warm-up).
    #[arg(long, value_name = "SECONDS", default_value_t = 5)]
    pub latency_secs: u64,
    /// Finished rows in the table for the claim-cost phase; 0 skips it.
    #[arg(long, value_name = "M", default_value_t = 1_000_000)]
    pub finished_rows: u64,
    /// Seconds of each ceiling run (one per connection count: 2, 4 and 8).
    #[arg(long, value_name = "SECONDS", default_value_t = 3)]
    pub ceiling_secs: u64,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
    /// Also write the JSON report to this file.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
}

/// Runs the benchmark and prints its report.
pub(crate) async fn run(global: &Global, args: BenchArgs) -> anyhow::Result<()> {
    let url = &global.database_url;
    if !(url.starts_with("postgres://") || url.starts_with("postgresql://")) {
        return Err(bad(format!(
            "oprec bench measures PostgreSQL: pass --database-url postgres://USER@HOST/DB (not {})",
            oprec::redact_url(url)
        )));
    }
    let worker = WorkerCommand {
        program: std::env::current_exe()?,
        args: Vec::new(),
    };
    let config = BenchConfig {
        ops: args.ops,
        concurrencies: args.concurrency.clone(),
        transports: args
            .transports
            .iter()
            .map(|t| t.trim().to_owned())
            .collect(),
        producers: args.producers,
        latency_rate: args.latency_rate,
        latency_secs: args.latency_secs,
        finished_rows: args.finished_rows,
        ceiling_secs: args.ceiling_secs,
        ..BenchConfig::new(url.clone(), worker)
    };
    let progress = |line: &str| eprintln!("oprec bench: {line}");
    let report = match oprec_bench::run(&config, &progress).await {
        Ok(r) => r,
        Err(e) if e.is_invalid_input() => return Err(bad(e.to_string())),
        Err(e) => return Err(e.into()),
    };
    if let Some(path) = &args.out {
        std::fs::write(path, serde_json::to_string_pretty(&report)? + "\n")
            .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?;
    }
    if args.json {
        output::json(&report)
    } else {
        output::text(&report.table())
    }
}
