//! `oprec quarantine` and `oprec release`: moving pending operations that cannot succeed as they
//! are (all malformed payloads of a kind, say) to held with a reason, and returning them to
//! pending once the cause is fixed, through the operator library ([`oprec::ops::moves`]). Without
//! `--yes` both only count what they would touch.

use clap::Args;
use oprec::ops::CancellationToken;
use oprec::ops::Spelling;
use oprec::ops::moves::{Move, MoveRequest};
use serde_json::json;

use crate::audit_trail::{self, ActorArgs};
use crate::backend::{Backend, store_error};
use crate::cli::Global;
use crate::filter::FilterArgs;
use crate::output::{self, count};
use crate::progress;

/// `oprec quarantine`.
#[derive(Debug, Args)]
pub(crate) struct QuarantineArgs {
    #[command(flatten)]
    pub filter: FilterArgs,
    /// Why they are held; kept on each operation (its last error's decision) and in the audit
    /// log.
    #[arg(long, value_name = "TEXT")]
    pub reason: String,
    /// Really quarantine (without it, only count the pending operations that match).
    #[arg(long)]
    pub yes: bool,
    #[command(flatten)]
    pub actor: ActorArgs,
    /// Print the result as JSON.
    #[arg(long)]
    pub json: bool,
}

/// `oprec release`.
#[derive(Debug, Args)]
pub(crate) struct ReleaseArgs {
    #[command(flatten)]
    pub filter: FilterArgs,
    /// Really release (without it, only count the held operations that match).
    #[arg(long)]
    pub yes: bool,
    /// With --yes and no filter: release every held operation (refused without it, so that a
    /// forgotten filter does not release everything).
    #[arg(long)]
    pub all: bool,
    /// Why, for the audit log.
    #[arg(long, value_name = "TEXT")]
    pub reason: Option<String>,
    #[command(flatten)]
    pub actor: ActorArgs,
    /// Print the result as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Counts, or (with `yes`) moves in batches, audits and reports.
async fn run(
    global: &Global,
    request: MoveRequest,
    note: Option<String>,
    actor: &ActorArgs,
    yes: bool,
    json: bool,
) -> anyhow::Result<()> {
    let who = actor.who()?;
    let backend = Backend::open(global).await?;
    let store = backend.store.as_ref();
    let planning = crate::progress::working("counting the matches");
    let review = request.review(store).await;
    planning.finish_and_clear();
    let review = review?;
    if !yes {
        if json {
            return output::json(&json!({
                "action": request.action(),
                "matched": review.matching,
                "would_move": review.planned,
                "changed": false,
            }));
        }
        return output::line!(
            "{} {} operations match ({} would be moved); nothing was changed: add --yes to {}",
            count(review.matching),
            request.from_status(),
            count(review.planned),
            request.action()
        );
    }
    let bar = progress::bar(
        review.planned,
        match request.how {
            Move::Quarantine { .. } => "held",
            Move::Release => "released",
        },
    );
    let done = request
        .apply(
            store,
            &who,
            note.as_deref(),
            &CancellationToken::new(),
            |n| bar.inc(n),
        )
        .await;
    bar.finish_and_clear();
    let moved = done.run.done;
    if let Some(e) = done.run.failure {
        return Err(store_error(e).context(format!(
            "stopped after moving {} operations; run the same command again for the rest",
            count(moved)
        )));
    }
    audit_trail::check(done.audit_failure)?;
    if json {
        return output::json(
            &json!({"action": request.action(), "moved": moved, "changed": moved > 0}),
        );
    }
    match request.how {
        Move::Quarantine { .. } => output::line!(
            "quarantined {} operations (now held; no worker claims them): fix the cause, then \
             `oprec release` them with the same filters, or `oprec cancel` them",
            count(moved)
        ),
        Move::Release => output::line!(
            "released {} held operations: pending again, eligible now (or when each was due, if \
             later)",
            count(moved)
        ),
    }
}

/// `oprec quarantine`.
pub(crate) async fn quarantine(global: &Global, args: QuarantineArgs) -> anyhow::Result<()> {
    let reason = audit_trail::reason("--reason", Some(&args.reason))?.unwrap_or_default();
    let request = MoveRequest::quarantine(args.filter.filter()?, reason, args.filter.limit()?)?;
    run(global, request, None, &args.actor, args.yes, args.json).await
}

/// `oprec release`.
pub(crate) async fn release(global: &Global, args: ReleaseArgs) -> anyhow::Result<()> {
    let note = audit_trail::reason("--reason", args.reason.as_deref())?;
    let request = MoveRequest::release(args.filter.filter()?, args.filter.limit()?);
    if args.yes {
        oprec::ops::filter::scope(
            &request.filter,
            args.all,
            "release",
            "held",
            Spelling::Flags,
        )?;
    }
    run(global, request, note, &args.actor, args.yes, args.json).await
}
