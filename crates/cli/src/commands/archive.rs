//! `oprec archive`: moving ended operations with their whole history out of the store into a
//! JSON Lines file, and `oprec archive restore` putting them back: the operator library's
//! archive and restore ([`oprec::ops::archive`], [`oprec::ops::restore`]) with a dry run, a
//! progress bar, ctrl-c to stop between two batches, and text or JSON output.

use std::path::PathBuf;

use chrono::Utc;
use clap::{Args, Subcommand};
use oprec::ops::archive::{ArchiveInput, ArchiveRequest, ArchiveReview};
use oprec::ops::{CancellationToken, Spelling, restore};

use crate::audit_trail::ActorArgs;
use crate::backend::{Backend, store_error};
use crate::cli::Global;
use crate::commands::redrive::stop_on_interrupt;
use crate::exit::bad;
use crate::output::{self, count};
use crate::progress;

/// What to do after an interruption or a failure.
const AGAIN: &str = "run the same command again with --append to archive the rest; what was \
removed is in the file, and nothing is removed twice";

/// The long help of `oprec archive` (clap takes a variant's one-line doc comment
/// as its whole help unless the variant names its long help).
pub(crate) const LONG_ABOUT: &str = "Move ended operations (succeeded, dead or cancelled; never pending, running, \
reconciling or held ones) with their whole history out of the store into a JSON Lines file: one \
operation per line, the full row with its attempts and durable steps nested and a SHA-256 \
checksum.\n\nEach batch is written, synced to disk and read back; only when every line parses \
and matches the rows read does the store remove exactly those operations, each only if it has \
not changed since it was read (an operation re-driven meanwhile stays, and the file notes it). \
Nothing is removed that was not written and read back. The file is never overwritten: it must \
not exist, unless --append.\n\nWithout --yes nothing is changed: the command prints how many \
operations match. `oprec archive restore FILE` puts them back.\n\nExample: oprec archive \
--status dead --until 30d --to dead-2026-11.jsonl --yes";

/// `oprec archive`.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub(crate) struct ArchiveArgs {
    #[command(subcommand)]
    pub command: Option<ArchiveCommand>,
    /// Which ended operations (repeatable): succeeded, dead, cancelled.
    #[arg(
        long = "status",
        value_name = "STATUS",
        required = true,
        help_heading = "Filters"
    )]
    pub statuses: Vec<String>,
    /// Only operations that ended more than this long ago (`30d`, `12h`), or before this RFC 3339
    /// time.
    #[arg(long, value_name = "DURATION|TIME", help_heading = "Filters")]
    pub until: Option<String>,
    /// Only operations that ended at or after this time: RFC 3339, or a duration ago.
    #[arg(long, value_name = "TIME|DURATION", help_heading = "Filters")]
    pub since: Option<String>,
    /// Only operations of this kind (repeatable).
    #[arg(long = "kind", value_name = "KIND", help_heading = "Filters")]
    pub kinds: Vec<String>,
    /// Only dead operations that ended for this terminal reason (repeatable): permanent,
    /// attempts_exhausted, deadline_passed, crash_loop, operator, obsolete.
    #[arg(long = "reason", value_name = "REASON", help_heading = "Filters")]
    pub reasons: Vec<String>,
    /// At most N operations in all.
    #[arg(long, value_name = "N", help_heading = "Filters")]
    pub limit: Option<u64>,
    /// The JSON Lines file to write; it must not exist (see --append).
    #[arg(long, value_name = "FILE", required = true)]
    pub to: Option<PathBuf>,
    /// Add to an existing archive file instead of refusing it.
    #[arg(long)]
    pub append: bool,
    /// Only print what would be archived.
    #[arg(long, conflicts_with = "yes")]
    pub dry_run: bool,
    /// Really archive (without it, the dry run is printed and nothing changes).
    #[arg(long)]
    pub yes: bool,
    /// Operations per batch: one read, one write and sync of the file, one removal transaction.
    #[arg(long, value_name = "N", default_value_t = oprec::ops::batches::DEFAULT_BATCH)]
    pub batch: u64,
    #[command(flatten)]
    pub actor: ActorArgs,
    /// Print the result (or the dry run) as JSON.
    #[arg(long)]
    pub json: bool,
}

/// `oprec archive restore`.
#[derive(Debug, Subcommand)]
pub(crate) enum ArchiveCommand {
    /// Put archived operations back from a file, with their original ids, statuses and history.
    #[command(
        long_about = "Put archived operations back from an archive file, with their \
original ids, statuses, attempts and steps. Nothing is overwritten: an operation already in the \
store is reported as present (the same as the file has it) or as a conflict (it differs). A line \
that does not parse or whose checksum does not hold is reported with its line number and \
restores nothing; the other lines are restored. Restoring a file twice restores nothing the \
second time.\n\nExits 1 when a line was malformed or in conflict, 0 otherwise."
    )]
    Restore(RestoreArgs),
}

/// `oprec archive restore`.
#[derive(Debug, Args)]
pub(crate) struct RestoreArgs {
    /// The archive file (JSON Lines, as `oprec archive` writes it).
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// Only report what would be restored.
    #[arg(long)]
    pub dry_run: bool,
    #[command(flatten)]
    pub actor: ActorArgs,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

impl ArchiveArgs {
    fn input(&self) -> ArchiveInput {
        let mut input = ArchiveInput {
            statuses: self.statuses.clone(),
            to: self.to.clone().unwrap_or_default(),
            append: self.append,
            limit: self.limit,
            batch: Some(self.batch),
            ..ArchiveInput::default()
        };
        input.filter.kinds = self.kinds.clone();
        input.filter.reasons = self.reasons.clone();
        input.filter.until = self.until.clone();
        input.filter.since = self.since.clone();
        input
    }
}

fn print_dry_run(review: &ArchiveReview, asked: bool, json: bool) -> anyhow::Result<()> {
    if json {
        return output::json(&review.to_json());
    }
    let total: u64 = review.matched.values().sum();
    let mut out = format!(
        "dry run: {} {} operations match",
        count(total),
        review.request.status_text()
    );
    if review.planned < total {
        out.push_str(&format!(
            " (--limit: {} would be archived)",
            count(review.planned)
        ));
    }
    out.push('\n');
    for (status, n) in &review.matched {
        out.push_str(&format!("  {status:<10} {}\n", count(*n)));
    }
    out.push_str(&format!(
        "they would be written to {}, verified, then removed from the store\n",
        review.request.to.display()
    ));
    out.push_str(if asked {
        "nothing was changed (dry run)\n"
    } else {
        "nothing was changed: add --yes to archive\n"
    });
    output::text(&out)
}

/// Runs `oprec archive` or `oprec archive restore`.
pub(crate) async fn run(global: &Global, args: ArchiveArgs) -> anyhow::Result<()> {
    if let Some(ArchiveCommand::Restore(r)) = args.command {
        return run_restore(global, r).await;
    }
    let request = ArchiveRequest::check(&args.input(), Spelling::Flags, Utc::now())?;
    let who = args.actor.who()?;
    let backend = Backend::open(global).await?;
    let store = backend.store.as_ref();
    let review = request.review(store).await?;
    if args.dry_run || !args.yes {
        return print_dry_run(&review, args.dry_run, args.json);
    }
    let stop = CancellationToken::new();
    let listener = stop_on_interrupt("archive", stop.clone());
    let bar = progress::bar(review.planned, "archived");
    let mut done = review
        .apply(store, &who, &stop, |b| bar.inc(b.written))
        .await;
    bar.finish_and_clear();
    listener.abort();
    let file = request.to.display();
    if let Some(e) = done.failure.take() {
        let removed = count(done.removed);
        return Err(match e {
            oprec::ops::Error::Store(s) => store_error(s),
            other => anyhow::Error::new(other),
        }
        .context(format!(
            "archive to {file} stopped after removing {removed} operations; {AGAIN}"
        )));
    }
    crate::audit_trail::check(done.audit_failure.take())?;
    if done.interrupted {
        anyhow::bail!(
            "interrupted after archiving {} of {} to {file}; {AGAIN}",
            count(done.removed),
            count(review.planned)
        );
    }
    if args.json {
        return output::json(&done.to_json(&request.to));
    }
    if done.written == 0 {
        return output::line!(
            "nothing matched: no operation was archived and nothing was written to {file} (not created)"
        );
    }
    let mut text = format!(
        "archived {} operations to {file} (written, synced and read back before removal)",
        count(done.removed)
    );
    if done.kept > 0 {
        text.push_str(&format!(
            "; {} changed while being archived and stayed in the store (the file notes them, \
             and a restore skips them)",
            count(done.kept)
        ));
    }
    output::line!("{text}")
}

async fn run_restore(global: &Global, args: RestoreArgs) -> anyhow::Result<()> {
    if !args.file.is_file() {
        return Err(bad(format!(
            "{} is not a file: name an archive file that `oprec archive` wrote",
            args.file.display()
        )));
    }
    let who = args.actor.who()?;
    let backend = Backend::open(global).await?;
    let store = backend.store.as_ref();
    let bar = progress::spinner("lines restored");
    let report = restore::restore(store, &args.file, args.dry_run, &who, |n| {
        bar.set_position(n)
    })
    .await
    .map_err(|e| match e {
        oprec::ops::Error::Store(s) => store_error(s),
        other => anyhow::Error::new(other),
    })?;
    bar.finish_and_clear();
    if args.json {
        output::json(&restore::to_json(&args.file, &report))?;
    } else {
        let verb = if args.dry_run {
            "would restore"
        } else {
            "restored"
        };
        let mut out = format!(
            "{verb} {} operations from {} ({} lines); {} already present",
            count(report.restored),
            args.file.display(),
            count(report.lines),
            count(report.present)
        );
        if report.skipped_kept > 0 {
            out.push_str(&format!(
                "; {} skipped (they stayed in the store when archived)",
                count(report.skipped_kept)
            ));
        }
        out.push('\n');
        for c in &report.conflicts {
            out.push_str(&format!("line {}: conflict: {}: {}\n", c.line, c.id, c.why));
        }
        for m in &report.malformed {
            out.push_str(&format!("line {}: malformed: {}\n", m.line, m.error));
        }
        output::text(&out)?;
    }
    if !report.clean() {
        anyhow::bail!(
            "{} conflicting and {} malformed lines were not restored; every other line was",
            report.conflicts.len(),
            report.malformed.len()
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_flags_become_the_archive_as_typed() {
        let args = ArchiveArgs {
            command: None,
            statuses: vec!["dead".into()],
            until: Some("30d".into()),
            since: None,
            kinds: vec!["demo.flaky".into()],
            reasons: vec![],
            limit: None,
            to: Some("x.jsonl".into()),
            append: false,
            dry_run: false,
            yes: true,
            batch: 7,
            actor: ActorArgs { actor: None },
            json: false,
        };
        let input = args.input();
        assert_eq!(input.filter.until.as_deref(), Some("30d"));
        assert_eq!(input.filter.kinds, vec!["demo.flaky".to_owned()]);
        assert_eq!(input.batch, Some(7));
        assert_eq!(json!(input.statuses), json!(["dead"]));
    }
}
