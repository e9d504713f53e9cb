//! `oprec redrive`: bringing dead (and, if asked, cancelled) operations back, by filter, after a
//! dry run, at a bounded pace. Only terminal operations are touched, so a re-drive never overlaps
//! a late attempt. The work goes in batches of 500, each one store call; an interrupted re-drive
//! run again goes on with the rest and re-drives nothing twice (in place, a re-driven operation is
//! no longer terminal; as new, one with a child is skipped; and only operations that ended before
//! the run began are taken, so one that dies again meanwhile waits for the next decision).

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use clap::Args;
use oprec::operator::{AuditEntry, OperationFilter, RedriveMode, RedriveParams, RedrivePreview};
use oprec::{PayloadMode, Registry, TerminalReason};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::audit_trail::{self, ActorArgs};
use crate::backend::{Backend, store_error};
use crate::cli::Global;
use crate::demo_kinds::{self, DemoPolicy, EffectTable};
use crate::exit::bad;
use crate::filter::FilterArgs;
use crate::output::{self, Table, count, cut};
use crate::pace::Pace;
use crate::{duration, progress};

/// Operations re-driven per store call (one transaction), unless `--batch` says otherwise.
const BATCH: u64 = 500;
/// The largest `--batch` accepted.
const MAX_BATCH: u64 = 5_000;
/// Errors shown in a dry run.
const SAMPLES: u32 = 5;

/// `oprec redrive`.
#[derive(Debug, Args)]
#[command(
    long_about = "Re-drive dead operations (and cancelled ones with --include-cancelled) \
that match the filters: in place (attempts reset, the same id) or --as-new (a new operation \
linked by redrive_of; the old one stays as it was).\n\nWithout --yes nothing is changed: the \
command prints the dry run (how many match, grouped by kind, class and terminal reason, how many \
matches are not terminal and so refused, a sample of errors, and whether each kind's payload is a \
snapshot that the re-drive replays or a reference to today's data). --rate or --spread staggers \
next_eligible_at so that a recovered dependency is not hit by the whole pile at once.\n\nHere \
--reason filters by terminal reason; the reason for the audit log is --note."
)]
pub(crate) struct RedriveArgs {
    #[command(flatten)]
    pub filter: FilterArgs,
    /// Only operations that ended for this terminal reason (repeatable): permanent,
    /// attempts_exhausted, deadline_passed, crash_loop, operator, obsolete.
    #[arg(long = "reason", value_name = "REASON", help_heading = "Filters")]
    pub reasons: Vec<String>,
    /// Only operations that ended at or after this time: RFC 3339, or a duration ago (`2h`).
    #[arg(long, value_name = "TIME|DURATION", help_heading = "Filters")]
    pub since: Option<String>,
    /// Only operations that ended before this time: RFC 3339, or a duration ago (`30m`).
    #[arg(long, value_name = "TIME|DURATION", help_heading = "Filters")]
    pub until: Option<String>,
    /// Cancelled operations too (otherwise only dead ones).
    #[arg(long, help_heading = "Filters")]
    pub include_cancelled: bool,
    /// Only print what would be re-driven.
    #[arg(long, conflicts_with = "yes")]
    pub dry_run: bool,
    /// Really re-drive (without it, the dry run is printed and nothing changes).
    #[arg(long)]
    pub yes: bool,
    /// Re-drive as new operations linked by redrive_of (otherwise in place).
    #[arg(long)]
    pub as_new: bool,
    /// A new deadline this long after each operation becomes eligible (otherwise a deadline
    /// already passed is cleared and a later one kept).
    #[arg(long, value_name = "DURATION")]
    pub extend_deadline: Option<String>,
    /// At most this many operations become eligible per second (`500/s`, `30/m`, `1000/h`).
    #[arg(long, value_name = "N/s")]
    pub rate: Option<String>,
    /// Spread the operations' eligible times evenly over this long (`10m`).
    #[arg(long, value_name = "DURATION")]
    pub spread: Option<String>,
    /// Operations per transaction; smaller batches hold row locks for less time.
    #[arg(long, value_name = "N", default_value_t = BATCH)]
    pub batch: u64,
    #[command(flatten)]
    pub actor: ActorArgs,
    /// Why, for the audit log (here --reason is a filter).
    #[arg(long, value_name = "TEXT")]
    pub note: Option<String>,
    /// Print the result (or the dry run) as JSON.
    #[arg(long)]
    pub json: bool,
}

/// A checked re-drive.
struct Plan {
    filter: OperationFilter,
    include_cancelled: bool,
    mode: RedriveMode,
    pace: Pace,
    limit: Option<u64>,
    batch: u64,
}

impl Plan {
    /// Checks every flag; bad values are bad input (exit 2) before anything is opened.
    fn from_args(args: &RedriveArgs, now: DateTime<Utc>) -> anyhow::Result<Self> {
        let mut filter = args.filter.filter()?;
        let mut reasons: Vec<TerminalReason> = args
            .reasons
            .iter()
            .map(|r| {
                r.trim()
                    .parse()
                    .map_err(|e| bad(format!("--reason: {e} (here --reason filters by terminal reason; the audit reason is --note)")))
            })
            .collect::<anyhow::Result<_>>()?;
        reasons.dedup();
        filter.reasons = reasons;
        filter.terminal_since = args
            .since
            .as_deref()
            .map(|s| duration::ago("--since", s, now))
            .transpose()?;
        filter.terminal_until = args
            .until
            .as_deref()
            .map(|s| duration::ago("--until", s, now))
            .transpose()?;
        if let (Some(s), Some(u)) = (filter.terminal_since, filter.terminal_until)
            && s >= u
        {
            return Err(bad(format!(
                "--since ({}) is not before --until ({}): nothing could match",
                output::time(s),
                output::time(u)
            )));
        }
        let extend = args
            .extend_deadline
            .as_deref()
            .map(|d| duration::parse_positive("--extend-deadline", d))
            .transpose()?;
        let mode = if args.as_new {
            RedriveMode::AsNew { deadline: extend }
        } else {
            RedriveMode::InPlace {
                extend_deadline: extend,
            }
        };
        Ok(Plan {
            filter,
            include_cancelled: args.include_cancelled,
            mode,
            pace: Pace::from_flags(args.rate.as_deref(), args.spread.as_deref())?,
            limit: args.filter.limit()?,
            batch: match args.batch {
                n @ 1..=MAX_BATCH => n,
                _ => return Err(bad(format!("--batch must be between 1 and {MAX_BATCH}"))),
            },
        })
    }

    fn mode_name(&self) -> &'static str {
        match self.mode {
            RedriveMode::InPlace { .. } => "in_place",
            RedriveMode::AsNew { .. } => "as_new",
        }
    }

    fn mode_text(&self) -> &'static str {
        match self.mode {
            RedriveMode::InPlace { .. } => "in place (attempts reset, same ids)",
            RedriveMode::AsNew { .. } => "as new operations linked by redrive_of",
        }
    }

    /// The filter and options, for the audit log.
    fn audit_filter(&self) -> anyhow::Result<Value> {
        let mut v = serde_json::to_value(&self.filter)?;
        if let Value::Object(m) = &mut v {
            m.insert("include_cancelled".into(), json!(self.include_cancelled));
        }
        Ok(v)
    }
}

/// Whether each grouped kind's payload is a snapshot or a reference, as this binary's kinds
/// declare; "unknown" for kinds it does not register.
fn payload_modes(preview: &RedrivePreview, registry: &Registry) -> BTreeMap<String, &'static str> {
    preview
        .groups
        .iter()
        .map(|g| {
            let mode = match registry.get(&g.kind).map(|k| k.payload_mode()) {
                Some(PayloadMode::Snapshot) => "snapshot",
                Some(PayloadMode::Reference) => "reference",
                None => "unknown",
            };
            (g.kind.clone(), mode)
        })
        .collect()
}

fn payload_text(mode: &str) -> &'static str {
    match mode {
        "snapshot" => "snapshot: the re-drive replays the payload taken at enqueue",
        "reference" => "reference: the re-drive acts on today's data, not the data at enqueue",
        _ => "unknown (no kind registered in this binary)",
    }
}

/// Prints the dry run.
fn print_dry_run(
    plan: &Plan,
    preview: &RedrivePreview,
    planned: u64,
    modes: &BTreeMap<String, &'static str>,
    asked_for_dry_run: bool,
    json: bool,
) -> anyhow::Result<()> {
    if json {
        return output::json(&json!({
            "dry_run": true,
            "changed": false,
            "matched": preview.matched,
            "would_redrive": planned,
            "not_terminal": preview.not_terminal,
            "groups": preview.groups,
            "samples": preview.samples,
            "payloads": modes,
            "mode": plan.mode_name(),
            "pace": plan.pace.to_json(planned),
        }));
    }
    let terminal = if plan.include_cancelled {
        "dead or cancelled"
    } else {
        "dead"
    };
    let mut out = format!(
        "dry run: {} {terminal} operations match",
        count(preview.matched)
    );
    if planned < preview.matched {
        out.push_str(&format!(
            " (--limit: {} would be re-driven)",
            count(planned)
        ));
    }
    out.push_str(&format!("; the re-drive would be {}\n", plan.mode_text()));
    if !preview.groups.is_empty() {
        let mut t = Table::new(&["KIND", "CLASS", "REASON", "COUNT"]);
        for g in &preview.groups {
            t.row(vec![
                g.kind.clone(),
                g.class.map(|c| c.to_string()).unwrap_or_else(|| "-".into()),
                g.reason
                    .map(|r| r.to_string())
                    .unwrap_or_else(|| "-".into()),
                count(g.count),
            ]);
        }
        out.push_str(&t.render("  "));
    }
    out.push_str(&format!(
        "not terminal, so refused: {} (pending, running, reconciling or held: a re-drive never \
         overlaps an attempt)\n",
        count(preview.not_terminal)
    ));
    if !modes.is_empty() {
        out.push_str("payloads:\n");
        let width = modes.keys().map(|k| k.chars().count()).max().unwrap_or(0);
        for (kind, mode) in modes {
            out.push_str(&format!("  {kind:<width$}  {}\n", payload_text(mode)));
        }
    }
    if !preview.samples.is_empty() {
        out.push_str("sample errors:\n");
        let mut t = Table::new(&["ID", "KIND", "ERROR"]);
        for s in &preview.samples {
            t.row(vec![
                s.id.to_string(),
                s.kind.clone(),
                cut(s.error.as_deref().unwrap_or("-"), 80),
            ]);
        }
        out.push_str(&t.render("  "));
    }
    out.push_str(&format!("pace: {}\n", plan.pace.describe(planned)));
    out.push_str(if asked_for_dry_run {
        "nothing was changed (dry run)\n"
    } else {
        "nothing was changed: add --yes to re-drive\n"
    });
    output::text(&out)
}

/// Sets `stop` on the first ctrl-c (the current batch finishes, the rest waits for a second
/// run); exits at once on the second. The handler is registered before this returns, so no
/// interrupt between two batches can end the process without its audit entry.
fn stop_on_interrupt(stop: CancellationToken) -> tokio::task::JoinHandle<()> {
    #[cfg(unix)]
    let mut interrupts =
        tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt()).ok();
    tokio::spawn(async move {
        for n in 0.. {
            #[cfg(unix)]
            let got = match interrupts.as_mut() {
                Some(s) => s.recv().await.is_some(),
                None => std::future::pending().await,
            };
            #[cfg(not(unix))]
            let got = tokio::signal::ctrl_c().await.is_ok();
            if !got {
                return;
            }
            if n == 0 {
                eprintln!(
                    "oprec redrive: stopping after this batch (a second ctrl-c stops at once)"
                );
                stop.cancel();
            } else {
                std::process::exit(130);
            }
        }
    })
}

/// What the batches did.
#[derive(Default)]
struct Progress {
    done: u64,
    batches: u64,
    /// Stopped by an interrupt with work left.
    interrupted: bool,
    first: Option<DateTime<Utc>>,
    last: Option<DateTime<Utc>>,
}

/// Re-drives in batches until `planned` are done, nothing is left, `stop` is set or a batch fails.
async fn drive(
    store: &dyn oprec::OperatorStore,
    plan: &Plan,
    planned: u64,
    start: DateTime<Utc>,
    stop: &CancellationToken,
) -> (Progress, Option<anyhow::Error>) {
    let spacing = plan.pace.spacing(planned);
    let total = plan.limit.unwrap_or(u64::MAX);
    let bar = progress::bar(planned, "re-driven");
    let mut p = Progress::default();
    let mut failure = None;
    while p.done < total {
        if stop.is_cancelled() {
            p.interrupted = true;
            break;
        }
        let ask = plan.batch.min(total - p.done);
        let params = RedriveParams {
            filter: plan.filter.clone(),
            include_cancelled: plan.include_cancelled,
            mode: plan.mode.clone(),
            limit: ask as u32,
            // Batch k starts where batch k-1 ended, so the whole run keeps one pace.
            start_at: start + spacing * i32::try_from(p.done).unwrap_or(i32::MAX),
            spacing,
        };
        match store.operation_redrive(params).await {
            Ok(batch) => {
                let n = batch.len() as u64;
                p.done += n;
                p.batches += 1;
                bar.inc(n);
                if let Some(first) = batch.first() {
                    p.first.get_or_insert(first.next_eligible_at);
                }
                if let Some(last) = batch.last() {
                    p.last = Some(last.next_eligible_at);
                }
                if n < ask {
                    break;
                }
            }
            Err(e) => {
                failure = Some(store_error(e));
                break;
            }
        }
    }
    bar.finish_and_clear();
    (p, failure)
}

/// Runs `oprec redrive`.
pub(crate) async fn run(global: &Global, args: RedriveArgs) -> anyhow::Result<()> {
    let mut plan = Plan::from_args(&args, Utc::now())?;
    let note = audit_trail::reason("--note", args.note.as_deref())?;
    let actor = args.actor.name()?;
    let backend = Backend::connect(&global.database_url).await?;
    let store = backend.store.as_ref();

    let began = store.now().await.map_err(store_error)?;
    let preview = store
        .redrive_preview(&plan.filter, plan.include_cancelled, SAMPLES)
        .await
        .map_err(store_error)?;
    let planned = plan
        .limit
        .map_or(preview.matched, |l| l.min(preview.matched));

    if args.dry_run || !args.yes {
        let policy = DemoPolicy::default().retry_policy()?;
        let registry = demo_kinds::registry(&policy, EffectTable::new(backend.concrete.clone()));
        let modes = payload_modes(&preview, &registry);
        return print_dry_run(&plan, &preview, planned, &modes, args.dry_run, args.json);
    }

    let audit_filter = plan.audit_filter()?;
    // Only what ended before this run: an operation that dies again while the run goes on is
    // not taken a second time by a later batch.
    plan.filter.terminal_until = Some(plan.filter.terminal_until.map_or(began, |u| u.min(began)));
    let stop = CancellationToken::new();
    let listener = stop_on_interrupt(stop.clone());
    let (done, failure) = drive(store, &plan, planned, began, &stop).await;
    listener.abort();
    let interrupted = done.interrupted;
    let complete = failure.is_none() && !interrupted;
    let pace = plan.pace.to_json(planned);
    if done.done > 0 {
        audit_trail::record(
            store,
            AuditEntry {
                actor,
                action: "redrive".to_owned(),
                filter: audit_filter,
                affected: done.done,
                reason: note,
                details: json!({
                    "mode": plan.mode,
                    "pace": pace,
                    "limit": plan.limit,
                    "ended_before": began,
                    "matched": preview.matched,
                    "not_terminal": preview.not_terminal,
                    "first_eligible_at": done.first,
                    "last_eligible_at": done.last,
                    "batches": done.batches,
                    "batch": plan.batch,
                    "complete": complete,
                }),
            },
        )
        .await?;
    }
    let again = "run the same command again to re-drive the rest; nothing is re-driven twice";
    if let Some(e) = failure {
        return Err(e.context(format!(
            "stopped after re-driving {}; {again}",
            count(done.done)
        )));
    }
    if interrupted {
        anyhow::bail!(
            "interrupted after re-driving {} of {}; {again}",
            count(done.done),
            count(planned)
        );
    }
    if args.json {
        return output::json(&json!({
            "redriven": done.done,
            "mode": plan.mode_name(),
            "pace": pace,
            "first_eligible_at": done.first,
            "last_eligible_at": done.last,
            "batches": done.batches,
            "not_terminal": preview.not_terminal,
            "changed": done.done > 0,
        }));
    }
    let mut text = format!(
        "re-drove {} operations {}",
        count(done.done),
        plan.mode_text()
    );
    if let (Some(first), Some(last)) = (done.first, done.last) {
        text.push_str(&format!(
            "; eligible from {} to {} ({})",
            output::time(first),
            output::time(last),
            plan.pace.describe(done.done)
        ));
    }
    if preview.not_terminal > 0 {
        text.push_str(&format!(
            "; {} matching operations are not terminal and were left alone",
            count(preview.not_terminal)
        ));
    }
    output::line!("{text}")
}
