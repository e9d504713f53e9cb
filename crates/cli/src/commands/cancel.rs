//! `oprec cancel`: ends operations that have not started their last attempt (pending, held or
//! reconciling) as cancelled. A running operation is not cancellable (its attempt would write
//! over the decision), nor is a finished one.
//!
//! Named by id (`oprec cancel ID...`), they are cancelled at once; the command says which were
//! not, with their status, and exits 1 if any was not. Named by filter (the flags of quarantine
//! and release), the command counts what would be cancelled and changes nothing unless given
//! `--yes` (and `--all` for no filter at all). The work is the operator library's
//! ([`oprec::ops::cancel`]).

use clap::Args;
use oprec::OperationId;
use oprec::ops::cancel::{CancelRequest, cancel, status_text};
use oprec::ops::filter::{self, MAX_IDS, narrows};
use oprec::ops::{CancellationToken, Spelling};
use oprec::{Status, operator::OperationFilter};
use serde_json::json;

use crate::audit_trail::{self, ActorArgs};
use crate::backend::{Backend, store_error};
use crate::cli::Global;
use crate::filter::FilterArgs;
use crate::output::{self, count};
use crate::progress;

/// `oprec cancel`.
#[derive(Debug, Args)]
#[command(
    long_about = "Cancel operations that have not finished and are not running (pending, held or \
reconciling).\n\nGiven ids, they are cancelled at once and the command exits 1 if any could not \
be. Given filters instead (the filters of `oprec quarantine`, `oprec release` and `oprec ops \
list`), nothing is changed without --yes: the command prints how many would be cancelled, and \
how many matches are running (left to finish their attempt). --yes with no filter at all is \
refused unless --all says every waiting operation is meant."
)]
pub(crate) struct CancelArgs {
    /// The operations to cancel (UUIDs), at once; leave them out to cancel by filter.
    #[arg(id = "operation_ids", value_name = "ID")]
    pub ids: Vec<String>,
    #[command(flatten)]
    pub filter: FilterArgs,
    /// Cancel by filter (without it, only count what the filters match and change nothing).
    #[arg(long)]
    pub yes: bool,
    /// With --yes and no filter: cancel every waiting operation (refused without it, so that a
    /// forgotten filter does not cancel everything).
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

/// Cancels by id, or by filter after a dry run.
pub(crate) async fn run(global: &Global, args: CancelArgs) -> anyhow::Result<()> {
    if args.ids.is_empty() {
        return by_filter(global, args).await;
    }
    if narrows(&args.filter.filter()?) || args.filter.limit.is_some() {
        return Err(crate::exit::bad(
            "give the operations either as ids or as filters, not both (--id is a filter too)",
        ));
    }
    if args.ids.len() > MAX_IDS {
        return Err(crate::exit::bad(format!(
            "at most {MAX_IDS} ids per command"
        )));
    }
    let ids = args
        .ids
        .iter()
        .map(|text| filter::id("operation id", text))
        .collect::<Result<Vec<OperationId>, _>>()?;
    let reason = audit_trail::reason("--reason", args.reason.as_deref())?;
    let who = args.actor.who()?;
    let backend = Backend::open(global).await?;
    let done = cancel(backend.store.as_ref(), &ids, &who, reason.as_deref()).await?;
    audit_trail::check(done.audit_failure)?;
    let refused: Vec<(OperationId, &str)> = done
        .not_cancelled
        .iter()
        .map(|n| (n.id, status_text(n.status)))
        .collect();
    if args.json {
        output::json(&json!({
            "cancelled": done.cancelled,
            "not_cancelled": refused.iter().map(|(id, s)| json!({"id": id, "status": s})).collect::<Vec<_>>(),
        }))?;
    } else {
        if !done.cancelled.is_empty() {
            output::line!("cancelled {}:", count(done.cancelled.len() as u64))?;
            for id in &done.cancelled {
                output::line!("  {id}")?;
            }
        }
        if !refused.is_empty() {
            output::line!(
                "not cancellable {} (running operations finish their attempt first; finished ones stay as they are):",
                count(refused.len() as u64)
            )?;
            for (id, status) in &refused {
                output::line!("  {id}  {status}")?;
            }
        }
    }
    if refused.is_empty() {
        Ok(())
    } else {
        anyhow::bail!(
            "{} of {} operations were not cancelled",
            count(refused.len() as u64),
            count((done.cancelled.len() + refused.len()) as u64)
        )
    }
}

/// The filters' cancellable matches: counted, or (with `--yes`) cancelled in batches, audited
/// and reported.
async fn by_filter(global: &Global, args: CancelArgs) -> anyhow::Result<()> {
    let request = CancelRequest {
        filter: args.filter.filter()?,
        limit: args.filter.limit()?,
    };
    if args.yes {
        filter::scope(
            &request.filter,
            args.all,
            "cancel",
            "waiting",
            Spelling::Flags,
        )?;
    }
    let reason = audit_trail::reason("--reason", args.reason.as_deref())?;
    let who = args.actor.who()?;
    let backend = Backend::open(global).await?;
    let store = backend.store.as_ref();
    let review = request.review(store).await?;
    let running = review.counts.get(&Status::Running).copied().unwrap_or(0);
    if !args.yes {
        if args.json {
            return output::json(&json!({
                "action": "cancel",
                "filter": filter_json(&request.filter),
                "matched": review.matching,
                "would_cancel": review.planned,
                "running": running,
                "changed": false,
            }));
        }
        return output::line!(
            "{} pending, held or reconciling operations match ({} would be cancelled{}); \
             nothing was changed: add --yes to cancel",
            count(review.matching),
            count(review.planned),
            if running > 0 {
                format!(
                    "; {} running ones are left to finish their attempt",
                    count(running)
                )
            } else {
                String::new()
            }
        );
    }
    let bar = progress::bar(review.planned, "cancelled");
    let done = request
        .apply(
            store,
            &who,
            reason.as_deref(),
            &CancellationToken::new(),
            |n| bar.inc(n),
        )
        .await;
    bar.finish_and_clear();
    let cancelled = done.run.done;
    if let Some(e) = done.run.failure {
        return Err(store_error(e).context(format!(
            "stopped after cancelling {} operations; run the same command again for the rest",
            count(cancelled)
        )));
    }
    audit_trail::check(done.audit_failure)?;
    if args.json {
        return output::json(&json!({
            "action": "cancel",
            "count": cancelled,
            "changed": cancelled > 0,
        }));
    }
    output::line!("cancelled {} operations", count(cancelled))
}

/// The filter as the JSON dry run shows it.
fn filter_json(f: &OperationFilter) -> serde_json::Value {
    serde_json::to_value(f).unwrap_or_else(|_| json!({}))
}
