//! `oprec simulate outage`: what each retry policy does to a dependency that is down, computed on
//! a virtual clock by `oprec-sim` through the real ladder and policy code. Prints a table per
//! policy and writes the attempts-per-minute chart as SVG.

use std::path::PathBuf;

use clap::{Args, Subcommand};
use oprec_sim::{Outage, PolicySpec, SimReport};
use serde::Serialize;

use crate::cli::Global;
use crate::duration;
use crate::exit::bad;
use crate::output::{self, Table, count};

/// The policies compared when none is given: a fixed 60-second loop with no bound, a six-rung ladder,
/// and exponential backoff without and with jitter.
pub(crate) const DEFAULT_POLICIES: &[&str] = &[
    "fixed:60s",
    "ladder:0,60,300,1500,7500,37500",
    "exp:60s,2,1h,max=150",
    "exp:60s,2,1h,max=150,jitter=full",
];

/// `oprec simulate ...`.
#[derive(Debug, Subcommand)]
pub(crate) enum SimulateCommand {
    /// Operations meet a dependency that is down: attempts, the retry storm at recovery, dead
    /// versus succeeded, per retry policy. No services needed.
    Outage(OutageArgs),
}

/// `oprec simulate outage`.
#[derive(Debug, Args)]
#[command(
    long_about = "Simulate N operations meeting a dependency that is down for a while, \
on a virtual clock, through oprec's real retry policy and ladder code: scheduled attempts in \
total and per day, attempts that hit the dependency during the outage, the peak wake-ups per \
second in the first minute after recovery and at any time after it (the retry storm), \
operations that end dead or succeeded, and when the backlog is gone. Every scheduled attempt is \
counted as if a worker were free to make it. Writes the attempts-per-minute chart as SVG.\n\n\
Policies: fixed:60s (retry every 60 s, unbounded), ladder:0,60,300 (those delays in seconds, \
then dead), exp:BASE,FACTOR,CEILING with optional ,jitter=full|equal|none|0.2 ,max=N \
(attempt bound, default 20) and ,giveup=72h (deadline)."
)]
pub(crate) struct OutageArgs {
    /// Operations enqueued when the dependency goes down.
    #[arg(long, value_name = "N", default_value_t = 50_000)]
    pub ops: u32,
    /// How long the dependency stays down.
    #[arg(long, value_name = "DURATION", default_value = "48h")]
    pub outage: String,
    /// How long to keep counting after it recovers.
    #[arg(long, value_name = "DURATION", default_value = "24h")]
    pub after: String,
    /// A policy to simulate (repeatable) [default: fixed:60s,
    /// ladder:0,60,300,1500,7500,37500, exp:60s,2,1h,max=150, exp:60s,2,1h,max=150,jitter=full].
    #[arg(long = "policy", value_name = "SPEC")]
    pub policies: Vec<String>,
    /// The seed of the jitter draws (same seed, same figures).
    #[arg(long, value_name = "S", default_value_t = 1)]
    pub seed: u64,
    /// Where to write the SVG chart.
    #[arg(long, value_name = "FILE", default_value = "outage.svg")]
    pub svg: PathBuf,
    /// Print the figures as JSON.
    #[arg(long)]
    pub json: bool,
}

/// One policy's figures, as printed with `--json` (the per-minute series is in the SVG).
#[derive(Debug, Serialize)]
struct PolicyFigures<'a> {
    policy: &'a str,
    attempts: u64,
    attempts_per_day: &'a [u64],
    attempts_during_outage: u64,
    peak_per_second_first_minute: u64,
    peak_per_second_after_recovery: u64,
    dead: u64,
    succeeded: u64,
    unresolved: u64,
    backlog_gone_after_seconds: Option<i64>,
}

impl<'a> From<&'a SimReport> for PolicyFigures<'a> {
    fn from(r: &'a SimReport) -> Self {
        PolicyFigures {
            policy: &r.policy,
            attempts: r.attempts,
            attempts_per_day: &r.attempts_per_day,
            attempts_during_outage: r.attempts_during_outage,
            peak_per_second_first_minute: r.peak_per_second_first_minute,
            peak_per_second_after_recovery: r.peak_per_second_after_recovery,
            dead: r.dead,
            succeeded: r.succeeded,
            unresolved: r.unresolved,
            backlog_gone_after_seconds: r.backlog_gone_after_seconds,
        }
    }
}

/// `172800` seconds as `48h00m`.
fn hours_minutes(secs: i64) -> String {
    format!("{}h{:02}m", secs / 3600, secs % 3600 / 60)
}

/// Runs `oprec simulate ...`.
pub(crate) async fn run(_global: &Global, command: SimulateCommand) -> anyhow::Result<()> {
    match command {
        SimulateCommand::Outage(args) => outage(args),
    }
}

fn outage(args: OutageArgs) -> anyhow::Result<()> {
    if args.ops == 0 {
        return Err(bad("--ops must be at least 1"));
    }
    let down = duration::parse_positive("--outage", &args.outage)?;
    let after = duration::parse("--after", &args.after)?;
    if down > chrono::Duration::days(366) || after > chrono::Duration::days(366) {
        return Err(bad("--outage and --after are limited to a year each"));
    }
    let specs: Vec<String> = if args.policies.is_empty() {
        DEFAULT_POLICIES.iter().map(|s| (*s).to_owned()).collect()
    } else {
        args.policies.clone()
    };
    let specs = specs
        .iter()
        .map(|s| s.parse::<PolicySpec>().map_err(|e| bad(e.to_string())))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let situation = Outage {
        ops: args.ops,
        outage: down,
        enqueue_over: chrono::Duration::zero(),
        after,
        seed: args.seed,
    };
    let reports: Vec<SimReport> = specs
        .iter()
        .map(|spec| oprec_sim::simulate(&situation, spec))
        .collect();
    let title = format!(
        "{} operations, dependency down for {}: attempts per minute",
        count(u64::from(args.ops)),
        hours_minutes(down.num_seconds())
    );
    let svg = oprec_sim::chart(&reports, (down.num_seconds() / 60) as usize, &title);
    std::fs::write(&args.svg, svg)
        .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", args.svg.display()))?;

    if args.json {
        return output::json(&serde_json::json!({
            "ops": args.ops,
            "outage_seconds": down.num_seconds(),
            "after_seconds": after.num_seconds(),
            "seed": args.seed,
            "svg": args.svg.display().to_string(),
            "policies": reports.iter().map(PolicyFigures::from).collect::<Vec<_>>(),
        }));
    }
    let mut t = Table::new(&[
        "POLICY",
        "ATTEMPTS",
        "PER DAY",
        "DURING OUTAGE",
        "PEAK/S 1ST MIN",
        "PEAK/S AFTER",
        "DEAD",
        "SUCCEEDED",
        "BACKLOG GONE",
    ]);
    for r in &reports {
        t.row(vec![
            r.policy.clone(),
            count(r.attempts),
            r.attempts_per_day
                .iter()
                .map(|d| count(*d))
                .collect::<Vec<_>>()
                .join(" / "),
            count(r.attempts_during_outage),
            count(r.peak_per_second_first_minute),
            count(r.peak_per_second_after_recovery),
            count(r.dead),
            count(r.succeeded),
            match r.backlog_gone_after_seconds {
                Some(s) => format!("after {}", hours_minutes(s)),
                None => format!("{} still waiting", count(r.unresolved)),
            },
        ]);
    }
    output::line!(
        "{} operations, dependency down {} from the start, counted until {} after recovery (seed {}):\n",
        count(u64::from(args.ops)),
        hours_minutes(down.num_seconds()),
        hours_minutes(after.num_seconds()),
        args.seed
    )?;
    output::text(&t.render(""))?;
    output::line!(
        "\nPER DAY: attempts in each 24 h from the start of the outage. PEAK/S: the busiest second \
         after recovery (1ST MIN: in its first minute). Chart: {}",
        args.svg.display()
    )
}
