//! `oprec quarantine` and `oprec release`: moving pending operations that cannot succeed as they
//! are (all malformed payloads of a kind, say) to held with a reason, and returning them to
//! pending once the cause is fixed. Without `--yes` both only count what they would touch.

use clap::Args;
use oprec::operator::{AuditEntry, OperationFilter, QuarantineParams, ReleaseParams};
use oprec::{OperatorStore, Status};
use serde_json::json;

use crate::audit_trail::{self, ActorArgs};
use crate::backend::{Backend, store_error};
use crate::cli::Global;
use crate::exit::bad;
use crate::filter::{self, FilterArgs};
use crate::output::{self, count};
use crate::progress;

/// Operations moved per store call.
const BATCH: u64 = 500;

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
    /// Why, for the audit log.
    #[arg(long, value_name = "TEXT")]
    pub reason: Option<String>,
    #[command(flatten)]
    pub actor: ActorArgs,
    /// Print the result as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Quarantine or release.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Move {
    Quarantine,
    Release,
}

impl Move {
    /// The status it takes operations from.
    fn from(self) -> Status {
        match self {
            Move::Quarantine => Status::Pending,
            Move::Release => Status::Held,
        }
    }

    fn action(self) -> &'static str {
        match self {
            Move::Quarantine => "quarantine",
            Move::Release => "release",
        }
    }
}

/// One batch of the move; returns how many moved.
async fn step(
    store: &dyn OperatorStore,
    how: Move,
    filter: &OperationFilter,
    reason: &str,
    actor: &str,
    limit: u64,
) -> anyhow::Result<u64> {
    let limit = u32::try_from(limit).unwrap_or(u32::MAX);
    match how {
        Move::Quarantine => store
            .operation_quarantine(QuarantineParams {
                filter: filter.clone(),
                reason: reason.to_owned(),
                actor: actor.to_owned(),
                limit,
            })
            .await
            .map_err(store_error),
        Move::Release => store
            .operation_release(ReleaseParams {
                filter: filter.clone(),
                limit,
            })
            .await
            .map_err(store_error),
    }
}

/// Counts, or (with `yes`) moves in batches, audits and reports.
#[allow(clippy::too_many_arguments)]
async fn run(
    global: &Global,
    how: Move,
    filter_args: &FilterArgs,
    reason: Option<String>,
    actor: &ActorArgs,
    yes: bool,
    json: bool,
) -> anyhow::Result<()> {
    let filter = filter_args.filter()?;
    let limit = filter_args.limit()?;
    let actor = actor.name()?;
    if how == Move::Quarantine && !filter::narrows(&filter) {
        return Err(bad(
            "quarantine needs a filter (--kind, --class, --error-contains, --dependency or --id); \
             to stop all work for a while, use `oprec pause`",
        ));
    }
    let backend = Backend::connect(&global.database_url).await?;
    let store = backend.store.as_ref();
    let counts = store
        .operation_count_matching(&filter)
        .await
        .map_err(store_error)?;
    let matching = counts.get(&how.from()).copied().unwrap_or(0);
    let planned = limit.map_or(matching, |l| l.min(matching));
    if !yes {
        if json {
            return output::json(&json!({
                "action": how.action(),
                "matched": matching,
                "would_move": planned,
                "changed": false,
            }));
        }
        return output::line!(
            "{} {} operations match ({} would be moved); nothing was changed: add --yes to {}",
            count(matching),
            how.from(),
            count(planned),
            how.action()
        );
    }

    let bar = progress::bar(
        planned,
        if how == Move::Quarantine {
            "held"
        } else {
            "released"
        },
    );
    let total = limit.unwrap_or(u64::MAX);
    let mut moved = 0u64;
    let mut failure = None;
    while moved < total {
        let ask = BATCH.min(total - moved);
        match step(
            store,
            how,
            &filter,
            reason.as_deref().unwrap_or(""),
            &actor,
            ask,
        )
        .await
        {
            Ok(n) => {
                moved += n;
                bar.inc(n);
                if n < ask {
                    break;
                }
            }
            Err(e) => {
                failure = Some(e);
                break;
            }
        }
    }
    bar.finish_and_clear();
    if moved > 0 {
        audit_trail::record(
            store,
            AuditEntry {
                actor,
                action: how.action().to_owned(),
                filter: serde_json::to_value(&filter)?,
                affected: moved,
                reason,
                details: json!({"limit": limit, "complete": failure.is_none()}),
            },
        )
        .await?;
    }
    if let Some(e) = failure {
        return Err(e.context(format!(
            "stopped after moving {} operations; run the same command again for the rest",
            count(moved)
        )));
    }
    if json {
        return output::json(
            &json!({"action": how.action(), "moved": moved, "changed": moved > 0}),
        );
    }
    match how {
        Move::Quarantine => output::line!(
            "quarantined {} operations (now held; no worker claims them): fix the cause, then \
             `oprec release` them with the same filters, or `oprec cancel` them",
            count(moved)
        ),
        Move::Release => output::line!(
            "released {} held operations: pending again, eligible now",
            count(moved)
        ),
    }
}

/// `oprec quarantine`.
pub(crate) async fn quarantine(global: &Global, args: QuarantineArgs) -> anyhow::Result<()> {
    let reason = audit_trail::reason("--reason", Some(&args.reason))?;
    run(
        global,
        Move::Quarantine,
        &args.filter,
        reason,
        &args.actor,
        args.yes,
        args.json,
    )
    .await
}

/// `oprec release`.
pub(crate) async fn release(global: &Global, args: ReleaseArgs) -> anyhow::Result<()> {
    let reason = audit_trail::reason("--reason", args.reason.as_deref())?;
    run(
        global,
        Move::Release,
        &args.filter,
        reason,
        &args.actor,
        args.yes,
        args.json,
    )
    .await
}
