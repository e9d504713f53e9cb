//! `oprec redrive`: bringing dead (and, if asked, cancelled) operations back, by filter, after a
//! dry run, at a bounded pace: the operator library's re-drive ([`oprec::ops::redrive`], the same
//! the dashboard runs), with a progress bar, ctrl-c to stop between two batches, and text or JSON
//! output.

use chrono::Utc;
use clap::{Args, Subcommand};
use oprec::PayloadMode;
use oprec::operator::{RedriveJob, RedriveJobState};
use oprec::ops::redrive::{
    self, RedriveDone, RedriveInput, RedriveRequest, RedriveReview, Resumption, payload_text,
};
use oprec::ops::redrive_job::{JobEvent, JobSpec, control_text};
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
pub(crate) const LONG_ABOUT: &str = concat!(
    "Re-drive dead operations (and cancelled ones with --include-cancelled) that match the \
filters: in place (attempts reset, the same id) or --as-new (a new operation linked by \
redrive_of; the old one stays dead with its history, marked redriven_as with its copy, and is \
no longer counted as dead awaiting action).\n\nWithout --yes nothing is changed: the command prints \
the dry run (how many match, grouped by kind, class, terminal reason and dependency, how many \
matches are not terminal and so refused, per group the first and last death and whether the \
dependency (or the kind) has succeeded since, the distinct errors with their counts, warnings for \
permanent and crash-loop groups, whether each kind's payload is a snapshot that the re-drive \
replays or a reference to today's data, and the pauses and postponements in force that will delay \
the work).\n\nWith --yes the re-drive runs as a job: \
--rate or --spread releases the operations at that pace, a second ahead of their eligible \
times, for as long as the pace takes, so that a recovered dependency is not hit by the whole \
pile at once. Operations a pause or postponement in force would hold back are released at the \
pace once it lifts, not all in its last second (with no pace, everything is released at once and \
the claim holds back what a control names). Stop a running job with `oprec redrive stop \
JOB` from anywhere, or ctrl-c here; either leaves it to resume with `oprec redrive resume \
JOB`; `oprec redrive status` lists the jobs. The brake: ",
    "a re-drive brakes (stops releasing, and says why) when more than half of a window of 50 \
operations it released are dead again: the first 50, or any later 50 among the last 500 it \
released",
    "; the job then exits 1 with the reason, kept in `oprec redrive status` and the audit log.\n\n\
Here --reason filters by terminal reason; the reason for the audit log is --note."
);

/// `oprec redrive`.
#[derive(Debug, Args)]
pub(crate) struct RedriveArgs {
    /// A re-drive job to look at, stop or resume (without one: a re-drive by filter).
    #[command(subcommand)]
    pub job: Option<JobCommand>,
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

/// `oprec redrive status|stop|resume`.
#[derive(Debug, Subcommand)]
pub(crate) enum JobCommand {
    /// List re-drive jobs, newest first, or show one: its state, how many it released of how many
    /// planned, and why it ended (stopped, braked, failed).
    Status(StatusArgs),
    /// Ask a running re-drive job to stop, from any machine: its process stops releasing within a
    /// second and exits; `oprec redrive resume JOB` goes on with the rest.
    Stop(StopArgs),
    /// Resume a stopped, interrupted, braked or failed re-drive job (or one whose process is gone:
    /// running but not saved for 30 s): the same filter, pace and limit, only operations that
    /// ended before its first dry run, nothing re-driven twice.
    Resume(ResumeArgs),
}

/// `oprec redrive status`.
#[derive(Debug, Args)]
pub(crate) struct StatusArgs {
    /// The job (as printed when it started); without it, the newest jobs.
    #[arg(value_name = "JOB")]
    pub job: Option<String>,
    /// At most this many jobs.
    #[arg(long, value_name = "N", default_value_t = 20)]
    pub limit: u32,
    /// Print the jobs as JSON.
    #[arg(long)]
    pub json: bool,
}

/// `oprec redrive stop`.
#[derive(Debug, Args)]
pub(crate) struct StopArgs {
    /// The running job (`oprec redrive status` lists them).
    #[arg(value_name = "JOB")]
    pub job: String,
    #[command(flatten)]
    pub actor: ActorArgs,
    /// Print the job as JSON.
    #[arg(long)]
    pub json: bool,
}

/// `oprec redrive resume`.
#[derive(Debug, Args)]
pub(crate) struct ResumeArgs {
    /// The job to resume (`oprec redrive status` lists them).
    #[arg(value_name = "JOB")]
    pub job: String,
    #[command(flatten)]
    pub actor: ActorArgs,
    /// Print the result as JSON.
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
        let mut t = Table::new(&[
            "KIND",
            "CLASS",
            "REASON",
            "COUNT",
            "DEPENDENCY",
            "FIRST DIED",
            "LAST DIED",
            "SUCCEEDED SINCE",
        ]);
        let now = Utc::now();
        let at = |t: Option<chrono::DateTime<Utc>>| {
            t.map_or_else(|| "-".into(), |t| output::when(t, now))
        };
        for g in &preview.groups {
            t.row(vec![
                g.kind.clone(),
                g.class.map(|c| c.to_string()).unwrap_or_else(|| "-".into()),
                g.reason
                    .map(|r| r.to_string())
                    .unwrap_or_else(|| "-".into()),
                count(g.count),
                g.dependency.clone().unwrap_or_else(|| "-".into()),
                at(g.first_ended_at),
                at(g.last_ended_at),
                g.recovered_at
                    .map_or_else(|| "no".into(), |t| format!("yes, {}", output::when(t, now))),
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
    if !preview.errors.is_empty() {
        out.push_str("errors (distinct, the most frequent first):\n");
        let mut t = Table::new(&["COUNT", "KIND", "ERROR", "FOR EXAMPLE"]).whole(3);
        for e in &preview.errors {
            t.row(vec![
                count(e.count),
                e.kind.clone(),
                e.error.clone().unwrap_or_else(|| "-".into()),
                e.example.to_string(),
            ]);
        }
        out.push_str(&t.render("  "));
    }
    let warnings = review.warnings();
    if !warnings.is_empty() {
        out.push_str("before you apply:\n");
        for w in &warnings {
            out.push_str(&format!("  ! {}\n", w.text));
        }
    }
    out.push_str(&format!("pace: {}\n", review.pace_text()));
    if !review.controls.is_empty() {
        out.push_str(
            "controls in force that will delay the work (the re-drive waits for them, then \
             keeps its pace):\n",
        );
        for (c, n) in &review.controls {
            out.push_str(&format!(
                "  {}: holds back {} of the matches\n",
                control_text(c),
                count(*n)
            ));
        }
    }
    out.push_str(if asked_for_dry_run {
        "nothing was changed (dry run)\n"
    } else {
        "nothing was changed: add --yes to re-drive\n"
    });
    output::human(&out)
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
    match args.job {
        Some(JobCommand::Status(a)) => return status(global, a).await,
        Some(JobCommand::Stop(a)) => return stop(global, a).await,
        Some(JobCommand::Resume(a)) => return resume(global, a).await,
        None => {}
    }
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
    let backend = Backend::open(global).await?;
    let store = backend.store.as_ref();
    // The review counts and groups every match (deaths, errors, controls): a line says so while
    // it runs, on a terminal, so that a large pile does not look like a hang.
    let planning = progress::working("planning the re-drive: counting and grouping the matches");
    let review = request.review(store).await;
    planning.finish_and_clear();
    let review = review?;
    if args.dry_run || !args.yes {
        return print_dry_run(&review, args.dry_run, args.json);
    }
    let stop = CancellationToken::new();
    let listener = stop_on_interrupt("redrive", stop.clone());
    let bar = progress::bar(review.planned, "re-driven");
    let done = review
        .apply(store, &who, note.as_deref(), &stop, |event| {
            on_event(&bar, &request, event)
        })
        .await;
    bar.finish_and_clear();
    listener.abort();
    finish(&request, review.preview.not_terminal, done, args.json)
}

/// Shows a job's progress: the bar, and a line when it waits for a control.
fn on_event(bar: &indicatif::ProgressBar, request: &RedriveRequest, event: JobEvent<'_>) {
    match event {
        JobEvent::Started(job) => bar.suspend(|| {
            eprintln!(
                "oprec redrive: job {id} releasing; stop it with `oprec redrive stop {id}` (or \
                 ctrl-c here), see it with `oprec redrive status {id}`",
                id = job.id
            )
        }),
        JobEvent::Released(batch) => bar.inc(batch.len() as u64),
        JobEvent::Waiting { left, controls } => {
            let held = if controls.is_empty() {
                "held back by a control or another re-drive".to_owned()
            } else {
                let names: Vec<String> = controls.iter().map(|(c, _)| control_text(c)).collect();
                format!("held back by the {}", names.join(", the "))
            };
            bar.suspend(|| {
                eprintln!(
                    "oprec redrive: waiting: {} operations left are {held}; the re-drive goes on \
                     {} once nothing holds them (ctrl-c leaves the job to resume)",
                    count(left),
                    match &request.pace {
                        oprec::ops::Pace::AllAtOnce => "at once".to_owned(),
                        p => format!(
                            "at its pace ({})",
                            p.describe(2).split(':').next().unwrap_or("")
                        ),
                    }
                )
            });
        }
    }
}

/// Prints how a job ended: the result when it is done; otherwise the reason, how to resume, and
/// exit 1.
fn finish(
    request: &RedriveRequest,
    not_terminal: u64,
    done: RedriveDone,
    json: bool,
) -> anyhow::Result<()> {
    let RedriveDone {
        mut run,
        job,
        first_eligible_at,
        last_eligible_at,
        audit_failure,
    } = done;
    let id = job.as_ref().map(|j| j.id.clone()).unwrap_or_default();
    let state = job.as_ref().map(|j| j.state);
    let why = job.as_ref().and_then(|j| j.reason.clone());
    let (released_in_all, planned) = job.as_ref().map_or((0, 0), |j| (j.released, j.planned));
    let resume = format!("oprec redrive resume {id}");
    if let Some(e) = run.failure.take() {
        let how = if id.is_empty() {
            AGAIN.to_owned()
        } else {
            format!("resume it with `{resume}`, or {AGAIN}")
        };
        return Err(store_error(e).context(format!(
            "stopped after re-driving {}; {how}",
            count(run.done)
        )));
    }
    audit_trail::check(audit_failure)?;
    let pace = request.pace.to_json(planned);
    if json {
        output::json(&json!({
            "job": id,
            "state": state.map(|s| s.as_str()),
            "reason": why,
            "redriven": run.done,
            "released_in_all": released_in_all,
            "planned": planned,
            "mode": request.mode_name(),
            "pace": pace,
            "first_eligible_at": first_eligible_at,
            "last_eligible_at": last_eligible_at,
            "batches": run.batches,
            "not_terminal": not_terminal,
            "changed": run.done > 0,
        }))?;
    }
    match state {
        Some(RedriveJobState::Interrupted) => anyhow::bail!(
            "interrupted after re-driving {} of {}; the job {id} is left to resume: `{resume}` \
             (or run the same command again to re-drive the rest; nothing is re-driven twice)",
            count(released_in_all),
            count(planned)
        ),
        Some(RedriveJobState::Stopped) => anyhow::bail!(
            "{}; the rest stays as it is; resume it with `{resume}`",
            why.unwrap_or_else(|| "stopped".to_owned())
        ),
        Some(RedriveJobState::Braked) => anyhow::bail!(
            "re-drive job {id} {}. Released {} of {}; the rest stays as it is. Look at what \
             they died of (oprec redrive --dry-run with the same filters), fix the cause, then \
             `{resume}`",
            why.unwrap_or_else(|| "braked".to_owned()),
            count(released_in_all),
            count(planned)
        ),
        _ => {}
    }
    if json {
        return Ok(());
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
    if not_terminal > 0 {
        text.push_str(&format!(
            "; {} matching operations are not terminal and were left alone",
            count(not_terminal)
        ));
    }
    if !id.is_empty() {
        text.push_str(&format!(" (job {id})"));
    }
    output::line!("{text}")
}

/// `oprec redrive status [JOB]`.
async fn status(global: &Global, args: StatusArgs) -> anyhow::Result<()> {
    let backend = Backend::open(global).await?;
    let store = backend.store.as_ref();
    let jobs = match &args.job {
        Some(id) => vec![redrive::find(store, id).await?],
        None => redrive::list(store, args.limit.clamp(1, 1_000)).await?,
    };
    let now = store.now().await.map_err(store_error)?;
    if args.json {
        let jobs: Vec<serde_json::Value> = jobs.iter().map(|j| job_json(j, now)).collect();
        return output::json(&if args.job.is_some() {
            jobs.into_iter().next().unwrap_or_default()
        } else {
            serde_json::Value::Array(jobs)
        });
    }
    if jobs.is_empty() {
        return output::line!("no re-drive jobs yet");
    }
    if let [job] = jobs.as_slice()
        && args.job.is_some()
    {
        let spec = JobSpec::from_job(job).ok();
        let mut out = format!(
            "re-drive job {}\n  state:     {}\n  released:  {} of {} planned\n  started:   {} by {}\n  saved:     {} ({} ago)\n",
            job.id,
            state_text(job, now),
            count(job.released),
            count(job.planned),
            output::time(job.created_at),
            job.actor,
            output::time(job.updated_at),
            oprec::ops::time::human(now - job.updated_at),
        );
        if let Some(spec) = spec {
            out.push_str(&format!(
                "  filter:    {}\n  mode:      {}\n  pace:      {}\n",
                serde_json::to_string(&spec.filter).unwrap_or_default(),
                if spec.as_new { "as new" } else { "in place" },
                spec.rate
                    .clone()
                    .map(|r| format!("--rate {r}"))
                    .or(spec.spread_us.map(|us| format!(
                        "--spread {}",
                        oprec::ops::time::human(chrono::Duration::microseconds(us))
                    )))
                    .unwrap_or_else(|| "all at once".to_owned())
            ));
        }
        if let Some(by) = &job.stop_requested_by
            && job.state == RedriveJobState::Running
        {
            out.push_str(&format!("  stopping:  asked by {by}\n"));
        }
        if let Some(why) = &job.reason {
            out.push_str(&format!("  why:       {why}\n"));
        }
        if job.state.resumable() || job.abandoned(now) {
            out.push_str(&format!("  resume:    oprec redrive resume {}\n", job.id));
        } else if job.state == RedriveJobState::Running {
            out.push_str(&format!("  stop:      oprec redrive stop {}\n", job.id));
        }
        return output::text(&out);
    }
    let mut t = Table::new(&["JOB", "STATE", "RELEASED", "ACTOR", "STARTED", "WHY"]);
    for j in &jobs {
        t.row(vec![
            j.id.clone(),
            state_text(j, now),
            format!("{}/{}", count(j.released), count(j.planned)),
            j.actor.clone(),
            output::time(j.created_at),
            cut(j.reason.as_deref().unwrap_or("-"), 80),
        ]);
    }
    output::text(&t.render(""))
}

/// A job's state, saying when a running one's process seems gone.
fn state_text(job: &RedriveJob, now: chrono::DateTime<Utc>) -> String {
    if job.abandoned(now) {
        format!("{} (its process is gone: resume takes it over)", job.state)
    } else if job.state == RedriveJobState::Running && job.stop_requested_by.is_some() {
        "running (stopping)".to_owned()
    } else {
        job.state.to_string()
    }
}

/// A job as `--json` prints it.
fn job_json(job: &RedriveJob, now: chrono::DateTime<Utc>) -> serde_json::Value {
    let mut v = serde_json::to_value(job).unwrap_or_default();
    if let serde_json::Value::Object(m) = &mut v {
        m.insert("abandoned".into(), json!(job.abandoned(now)));
        m.insert(
            "resumable".into(),
            json!(job.state.resumable() || job.abandoned(now)),
        );
    }
    v
}

/// `oprec redrive stop JOB`.
async fn stop(global: &Global, args: StopArgs) -> anyhow::Result<()> {
    let who = args.actor.who()?;
    let backend = Backend::open(global).await?;
    let store = backend.store.as_ref();
    let job = redrive::stop(store, &args.job, &who).await?;
    if args.json {
        return output::json(&job_json(&job, store.now().await.map_err(store_error)?));
    }
    output::line!(
        "asked re-drive job {} to stop (released {} of {} so far); its process stops releasing \
         within a second and exits; resume it with `oprec redrive resume {}`",
        job.id,
        count(job.released),
        count(job.planned),
        job.id
    )
}

/// `oprec redrive resume JOB`.
async fn resume(global: &Global, args: ResumeArgs) -> anyhow::Result<()> {
    let who = args.actor.who()?;
    let backend = Backend::open(global).await?;
    let store = backend.store.as_ref();
    let resumption = Resumption::load(store, &args.job).await?;
    let request = resumption.request.clone();
    let left = resumption
        .job
        .planned
        .saturating_sub(resumption.job.released);
    eprintln!(
        "oprec redrive: resuming job {} ({} of {} released so far)",
        resumption.job.id,
        count(resumption.job.released),
        count(resumption.job.planned)
    );
    let stop = CancellationToken::new();
    let listener = stop_on_interrupt("redrive", stop.clone());
    let bar = progress::bar(left, "re-driven");
    let done = resumption
        .apply(store, &who, &stop, |event| on_event(&bar, &request, event))
        .await;
    bar.finish_and_clear();
    listener.abort();
    finish(&request, 0, done, args.json)
}
