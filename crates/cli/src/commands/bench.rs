//! `oprec bench`: runs the benchmark of `oprec-bench` against PostgreSQL (and the brokers named
//! by `--transports`), with one progress line per phase on stderr, and prints the table (or the
//! JSON report). The drain and latency phases run this very binary as the worker process.

use std::path::PathBuf;

use clap::Args;
use oprec_bench::{BenchConfig, WorkerCommand};

use crate::cli::Global;
use crate::duration;
use crate::exit::bad;
use crate::output::{self, Table, count};

/// `oprec bench`.
#[derive(Debug, Args)]
#[command(
    long_about = "Benchmark oprec against PostgreSQL's own ceiling on this machine: \
batched and single enqueues, the drain of N operations by a worker process per concurrency and \
transport, \
enqueue → claim latency at a light steady rate, transactions committed per operation, the \
worker's peak memory, the claim's cost with many finished rows, and what limits across the fleet add to a claim and \
to a drain. Every phase runs in a fresh \
schema `oprec_bench_<uuid>` of --database-url (which must be PostgreSQL), dropped afterwards; \
brokers get a fresh stream or queue. Every throughput is also given as a fraction of the \
ceiling: the same database doing the bare insert → claim → complete work with no oprec; each \
drain also as a fraction of the bare claim → complete of a full table, and single enqueues as a \
fraction of one-row commits from --producers connections (each waiting for its commit: the most \
that many producers can reach without sharing commits).\n\nTwo runs stand alone: \
--stats-rows N times `oprec stats` with N finished rows and stale planner statistics; --steady \
DURATION enqueues at --rate and drains together, with retention of --retain, and samples sizes, \
claim and stats latency, removals and retention's share every --sample-every."
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
    /// Rounds of the limit-cost phase: each times a claim of 100 with no limit, under limits with
    /// room, capped to half by a running limit, spread over the five priority levels, and the
    /// claim ahead of a broker's backlog (README, "Priorities"). 0 skips it, with the drain that
    /// repeats the first under limits with room.
    #[arg(long, value_name = "N", default_value_t = 200)]
    pub limit_samples: usize,
    /// Seconds of each ceiling run (one per connection count: 2, 4 and 8).
    #[arg(long, value_name = "SECONDS", default_value_t = 3)]
    pub ceiling_secs: u64,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
    /// Also write the JSON report to this file.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Instead of the phases above: time `stats` with this many finished rows in the table,
    /// bulk-inserted and never analyzed (stale planner statistics), against the table counts
    /// it used to make; then turn 5,000 of them dead at once and time the operator's
    /// statements on that mass death (re-drive dry run, quarantine count, dead listing, a
    /// re-drive as new of them all).
    #[arg(long, value_name = "N", conflicts_with = "steady")]
    pub stats_rows: Option<u64>,
    /// With `--stats-rows`: waiting (pending) operations beside the finished ones, the backlog
    /// whose age `stats` reports.
    #[arg(
        long,
        value_name = "N",
        default_value_t = oprec_bench::STATS_PENDING,
        requires = "stats_rows"
    )]
    pub stats_pending: u64,
    /// Instead of the phases above: enqueue and drain together for this long at `--rate`, with
    /// retention of `--retain`, sampling sizes and latencies every `--sample-every`.
    #[arg(long, value_name = "DURATION")]
    pub steady: Option<String>,
    /// The steady run's enqueue rate, per second.
    #[arg(
        long,
        value_name = "PER_SECOND",
        default_value_t = 500,
        requires = "steady"
    )]
    pub rate: u32,
    /// How long the steady run's worker keeps succeeded operations.
    #[arg(
        long,
        value_name = "DURATION",
        default_value = "5m",
        requires = "steady"
    )]
    pub retain: String,
    /// Run even though the database already holds operations (a database that serves real
    /// work): the benchmark writes its rows into schemas of its own and drops them, but loads
    /// the server while it runs.
    #[arg(long)]
    pub yes: bool,
    /// How often the steady run samples.
    #[arg(
        long,
        value_name = "DURATION",
        default_value = "1m",
        requires = "steady"
    )]
    pub sample_every: String,
}

/// Writes `report` to `--out` if given, then prints it as JSON or as `text`.
fn emit<T: serde::Serialize>(args: &BenchArgs, report: &T, text: String) -> anyhow::Result<()> {
    if let Some(path) = &args.out {
        std::fs::write(path, serde_json::to_string_pretty(report)? + "\n")
            .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?;
    }
    if args.json {
        output::json(report)
    } else {
        output::text(&text)
    }
}

/// `--stats-rows` and `--steady`: the single-phase runs.
async fn single(url: &str, args: &BenchArgs) -> anyhow::Result<Option<()>> {
    let progress = |line: &str| eprintln!("oprec bench: {line}");
    let fail = |e: oprec_bench::Error| -> anyhow::Error {
        if e.is_invalid_input() {
            bad(e.to_string())
        } else {
            e.into()
        }
    };
    if let Some(rows) = args.stats_rows {
        let r = oprec_bench::stats_at_scale(url, rows, args.stats_pending, &progress)
            .await
            .map_err(fail)?;
        let text = format!(
            "stats with {} finished and {} pending rows (statistics stale): {:.1} ms median, \
             {:.1} ms slowest; the table counts it used to make: {:.0} ms; the backlog by age \
             read from the waiting rows, as before: {:.0} ms\n\
             then {} of them dead at once (statistics still stale): the re-drive's dry run \
             {:.1} ms, a quarantine's count {:.1} ms, the first page of dead operations {:.1} \
             ms, a re-drive as new of all {} {:.0} ms\n",
            r.finished_rows,
            r.pending_rows,
            r.stats_median_ms,
            r.stats_max_ms,
            r.table_count_median_ms,
            r.backlog_rows_median_ms,
            r.dead_rows,
            r.redrive_review_median_ms,
            r.quarantine_count_median_ms,
            r.dead_list_median_ms,
            r.dead_rows,
            r.redrive_as_new_ms
        );
        emit(args, &r, text)?;
        return Ok(Some(()));
    }
    let Some(duration) = &args.steady else {
        return Ok(None);
    };
    let config = oprec_bench::SteadyConfig {
        duration: duration::parse_positive("--steady", duration)?
            .to_std()
            .unwrap_or_default(),
        rate: args.rate,
        retain: duration::parse_positive("--retain", &args.retain)?,
        sample_every: duration::parse_positive("--sample-every", &args.sample_every)?
            .to_std()
            .unwrap_or_default(),
        concurrency: args.concurrency.first().copied().unwrap_or(32),
    };
    let r = oprec_bench::steady(url, &config, &progress)
        .await
        .map_err(fail)?;
    let mut t = Table::new(&[
        "at",
        "operations",
        "pending",
        "table MB",
        "indexes MB",
        "attempts MB",
        "claim ms",
        "stats ms",
        "enqueued/s",
        "removed/s",
        "retention share",
    ]);
    for s in &r.samples {
        t.row(vec![
            format!("{:.0}s", s.at_seconds),
            count(s.operations),
            count(s.pending),
            format!("{:.1}", s.table_bytes as f64 / 1e6),
            format!("{:.1}", s.index_bytes as f64 / 1e6),
            format!("{:.1}", s.attempts_bytes as f64 / 1e6),
            format!("{:.2}", s.claim_ms),
            format!("{:.2}", s.stats_ms),
            format!("{:.0}", s.enqueued_per_second),
            format!("{:.0}", s.removed_per_second),
            format!("{:.1}%", s.retention_write_share * 100.0),
        ]);
    }
    let text = format!(
        "steady run: {} s at {}/s, retention {} s, concurrency {}: {} enqueued, {} removed\n\n{}",
        r.seconds,
        r.rate,
        r.retain_seconds,
        r.concurrency,
        count(r.enqueued),
        count(r.removed),
        t.render("  ")
    );
    emit(args, &r, text)?;
    Ok(Some(()))
}

/// About how many operation rows the run writes (each enqueued, claimed and completed), for the
/// refusal below: the enqueue phases, one drain per concurrency and transport, the latency
/// phases and the claim-cost table; the ceilings and the single runs are bounded by time or
/// their own figure.
fn rows_written(args: &BenchArgs) -> u64 {
    if let Some(rows) = args.stats_rows {
        // The mass death's copies too (its re-drive as new).
        return rows + args.stats_pending + rows.min(oprec_bench::STATS_DEAD);
    }
    if args.steady.is_some() {
        return 0;
    }
    let limited = u64::from(args.limit_samples > 0);
    let drains = (args.concurrency.len() * args.transports.len()) as u64 + limited;
    let latency = args.transports.len() as u64 * u64::from(args.latency_rate) * args.latency_secs;
    let single = (args.ops / 10).max(100);
    // Five claims of 100 per round (ten warm-up rounds), behind a backlog of 10,000.
    let limit_rounds = limited * ((args.limit_samples as u64 + 10) * 5 * 100 + 10_000);
    args.ops * (1 + drains) + single + latency + args.finished_rows + limit_rounds
}

/// Refuses (exit 2) to load a database that already holds operations unless `--yes` says so,
/// naming how many it holds and how much the run would write.
async fn guard(url: &str, args: &BenchArgs) -> anyhow::Result<()> {
    if args.yes {
        return Ok(());
    }
    // A database that cannot be reached is the run's own error to report.
    let Ok(backend) = crate::backend::Backend::connect(url).await else {
        return Ok(());
    };
    let held: u64 = match backend.store.operation_count().await {
        Ok(rows) => rows.iter().map(|r| r.count).sum(),
        Err(oprec::Error::SchemaMissing { .. }) => 0,
        Err(e) => return Err(e.into()),
    };
    if held == 0 {
        return Ok(());
    }
    let writes = match rows_written(args) {
        0 => format!(
            "enqueues and drains {}/s for the --steady duration",
            args.rate
        ),
        n => format!("writes about {} operation rows", count(n)),
    };
    Err(bad(format!(
        "{} holds {} operation{}: it serves real work. The benchmark {writes} (in schemas of its \
         own, dropped afterwards) and keeps the server busy while it runs. Point \
         --database-url at a database of its own, or pass --yes to run here anyway",
        backend.url,
        count(held),
        if held == 1 { "" } else { "s" }
    )))
}

/// Refuses, before minutes of measuring, what would only fail later: a transport URL that does
/// not parse, or a report file in a folder that does not exist.
fn check_before_running(args: &BenchArgs) -> anyhow::Result<()> {
    for t in &args.transports {
        if let Err(e) = oprec::connect_transport(t.trim()) {
            return Err(bad(format!("--transports: {e}")));
        }
    }
    if let Some(path) = &args.out {
        let folder = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => std::path::Path::new("."),
        };
        if !folder.is_dir() {
            return Err(bad(format!(
                "--out {}: the folder {} does not exist",
                path.display(),
                folder.display()
            )));
        }
    }
    Ok(())
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
    check_before_running(&args)?;
    guard(url, &args).await?;
    if single(url, &args).await?.is_some() {
        return Ok(());
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
        limit_samples: args.limit_samples,
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
