//! `oprec redrive`: bringing dead (and, if asked, cancelled) operations back, by filter, after a
//! dry run, at a bounded pace: the operator library's re-drive ([`oprec::ops::redrive`], the same
//! the dashboard runs), with a progress bar, ctrl-c to stop between two batches, and text or JSON
//! output.

use chrono::Utc;
use clap::Args;
use oprec::PayloadMode;
use oprec::ops::redrive::{RedriveDone, RedriveInput, RedriveRequest, RedriveReview, payload_text};
use oprec::ops::{CancellationToken, Spelling};
use serde_json::json;

use crate::audit_trail::{self, ActorArgs};
use crate::backend::{Backend, store_error};
use crate::cli::Global;
use crate::filter::FilterArgs;
use crate::output::{self, Table, count, cut};
use crate::progress;

/// What to do after an interruption or a failure.
const AGAIN: &str = "run the same command again to re-drive the rest; nothing is re-driven twice";

/// Operations re-driven per store call (one transaction), unless `--batch` says otherwise.
const BATCH: u64 = oprec::ops::batches::DEFAULT_BATCH;

/// The long help of `oprec redrive` (clap takes a variant's one-line doc comment
/// as its whole help unless the variant names its long help).
pub(crate) const LONG_ABOUT: &str = "Re-drive dead operations (and cancelled ones with --include-cancelled) \
that match the filters: in place (attempts reset, the same id) or --as-new (a new operation \
linked by redrive_of; the old one stays dead with its history, marked redriven_as with its \
copy, and is no longer counted as dead awaiting action).\n\nWithout --yes nothing is changed: the \
command prints the dry run (how many match, grouped by kind, class and terminal reason, how many \
matches are not terminal and so refused, a sample of errors, and whether each kind's payload is a \
snapshot that the re-drive replays or a reference to today's data). --rate or --spread staggers \
next_eligible_at so that a recovered dependency is not hit by the whole pile at once.\n\nHere \
--reason filters by terminal reason; the reason for the audit log is --note.";

/// `oprec redrive`.
#[derive(Debug, Args)]
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
    /// With --yes and no filter: re-drive every dead operation (refused without it, so that a
    /// forgotten filter does not re-drive everything).
    #[arg(long)]
    pub all: bool,
    /// Re-drive as new operations linked by redrive_of (otherwise in place); each original
    /// stays dead, linked to its copy by redriven_as and no longer counted as awaiting action.
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

impl RedriveArgs {
    /// The re-drive as typed.
    fn input(&self) -> RedriveInput {
        let mut filter = self.filter.input();
        filter.reasons = self.reasons.clone();
        filter.since = self.since.clone();
        filter.until = self.until.clone();
        RedriveInput {
            filter,
            include_cancelled: self.include_cancelled,
            as_new: self.as_new,
            extend_deadline: self.extend_deadline.clone(),
            rate: self.rate.clone(),
            spread: self.spread.clone(),
            limit: self.filter.limit,
            batch: Some(self.batch),
        }
    }
}

/// Prints the dry run.
fn print_dry_run(
    review: &RedriveReview,
    asked_for_dry_run: bool,
    json: bool,
) -> anyhow::Result<()> {
    if json {
        return output::json(&review.to_json());
    }
    let (request, preview, planned) = (&review.request, &review.preview, review.planned);
    let mut out = format!(
        "dry run: {} {} operations match",
        count(preview.matched),
        request.terminal_text()
    );
    if planned < preview.matched {
        out.push_str(&format!(
            " (--limit: {} would be re-driven)",
            count(planned)
        ));
    }
    out.push_str(&format!(
        "; the re-drive would be {}\n",
        request.mode_text()
    ));
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
    let modes = review.payload_modes();
    if !modes.is_empty() {
        out.push_str("payloads:\n");
        let width = modes.keys().map(|k| k.chars().count()).max().unwrap_or(0);
        for (kind, mode) in &modes {
            let text = match *mode {
                "mixed" => "mixed: some operations replay a snapshot, others act on today's data",
                m => payload_text(m.parse::<PayloadMode>().ok()),
            };
            out.push_str(&format!("  {kind:<width$}  {text}\n"));
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
    out.push_str(&format!("pace: {}\n", review.pace_text()));
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
pub(crate) fn stop_on_interrupt(
    command: &'static str,
    stop: CancellationToken,
) -> tokio::task::JoinHandle<()> {
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
                    "oprec {command}: stopping after this batch (a second ctrl-c stops at once)"
                );
                stop.cancel();
            } else {
                std::process::exit(130);
            }
        }
    })
}

/// Runs `oprec redrive`.
pub(crate) async fn run(global: &Global, args: RedriveArgs) -> anyhow::Result<()> {
    let request = RedriveRequest::check(&args.input(), Spelling::Flags, Utc::now())?;
    if args.yes && !args.dry_run {
        oprec::ops::filter::scope(
            &request.filter,
            args.all,
            "redrive",
            request.terminal_text(),
            Spelling::Flags,
        )?;
    }
    let note = audit_trail::reason("--note", args.note.as_deref())?;
    let who = args.actor.who()?;
    let backend = Backend::connect(&global.database_url).await?;
    let store = backend.store.as_ref();
    let review = request.review(store).await?;
    if args.dry_run || !args.yes {
        return print_dry_run(&review, args.dry_run, args.json);
    }
    let stop = CancellationToken::new();
    let listener = stop_on_interrupt("redrive", stop.clone());
    let bar = progress::bar(review.planned, "re-driven");
    let done = review
        .apply(store, &who, note.as_deref(), &stop, |batch| {
            bar.inc(batch.len() as u64)
        })
        .await;
    bar.finish_and_clear();
    listener.abort();
    let RedriveDone {
        mut run,
        first_eligible_at,
        last_eligible_at,
        audit_failure,
    } = done;
    if let Some(e) = run.failure.take() {
        return Err(store_error(e).context(format!(
            "stopped after re-driving {}; {AGAIN}",
            count(run.done)
        )));
    }
    audit_trail::check(audit_failure)?;
    if run.interrupted {
        anyhow::bail!(
            "interrupted after re-driving {} of {}; {AGAIN}",
            count(run.done),
            count(review.planned)
        );
    }
    let pace = request.pace.to_json(review.planned);
    if args.json {
        return output::json(&json!({
            "redriven": run.done,
            "mode": request.mode_name(),
            "pace": pace,
            "first_eligible_at": first_eligible_at,
            "last_eligible_at": last_eligible_at,
            "batches": run.batches,
            "not_terminal": review.preview.not_terminal,
            "changed": run.done > 0,
        }));
    }
    let mut text = format!(
        "re-drove {} operations {}",
        count(run.done),
        request.mode_text()
    );
    if let (Some(first), Some(last)) = (first_eligible_at, last_eligible_at) {
        text.push_str(&format!(
            "; eligible from {} to {} ({})",
            output::time(first),
            output::time(last),
            request.pace.describe(run.done)
        ));
    }
    if review.preview.not_terminal > 0 {
        text.push_str(&format!(
            "; {} matching operations are not terminal and were left alone",
            count(review.preview.not_terminal)
        ));
    }
    output::line!("{text}")
}
