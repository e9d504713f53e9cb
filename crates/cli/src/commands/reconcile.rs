//! `oprec reconcile list` and `oprec reconcile resolve`: unknown outcomes (a timeout after the
//! request was written) wait in reconciling, never retried blindly. Workers ask kinds' reconcile
//! hooks; these commands show what is waiting and record a human decision: applied (succeeded,
//! with the remote id when known) or not applied (pending again, safe to retry).

use chrono::{DateTime, Utc};
use clap::{ArgGroup, Args, Subcommand};
use oprec::ops::filter;
use oprec::ops::resolve::{MAX_REMOTE_ID, ResolveRequest, resolve as resolve_one};
use oprec::ops::{CancellationToken, Spelling};
use oprec::store::{ListParams, OperationGetParams};
use oprec::{Operation, Resolution, Status};
use serde::Serialize;
use serde_json::json;

use crate::audit_trail::{self, ActorArgs};
use crate::backend::{Backend, store_error};
use crate::cli::Global;
use crate::exit::bad;
use crate::filter::FilterArgs;
use crate::output::{self, Table, cut};

/// `oprec reconcile ...`.
#[derive(Debug, Subcommand)]
pub(crate) enum ReconcileCommand {
    /// Operations whose outcome is unknown, waiting for their kind's reconcile hook or a person.
    List(ListArgs),
    /// Record what a person found: the effect was applied, or it was not.
    Resolve(Box<ResolveArgs>),
}

/// `oprec reconcile list`.
#[derive(Debug, Args)]
pub(crate) struct ListArgs {
    /// Only this kind.
    #[arg(long, value_name = "KIND")]
    pub kind: Option<String>,
    /// The most operations to show (at most 1,000).
    #[arg(long, value_name = "N", default_value_t = 50)]
    pub limit: u32,
    /// Print the operations as a JSON array.
    #[arg(long)]
    pub json: bool,
}

/// `oprec reconcile resolve`.
#[derive(Debug, Args)]
#[command(group(ArgGroup::new("decision").required(true).args(["applied", "not_applied"])))]
#[command(
    long_about = "Record what a person found about unknown outcomes: the effect was applied \
(the operation ends succeeded) or it was not (pending again, eligible now, safe to retry).\n\n\
Given an id, that operation is resolved at once. Given filters instead (the filters of `oprec \
cancel` and `oprec ops list`), every reconciling match is resolved the same way, but only with \
--yes: without it the command prints how many would be resolved and changes nothing. --yes with \
no filter at all is refused unless --all says every reconciling operation is meant."
)]
pub(crate) struct ResolveArgs {
    /// The operation (reconciling); leave it out to resolve by filter.
    #[arg(value_name = "ID")]
    pub id: Option<String>,
    #[command(flatten)]
    pub filter: FilterArgs,
    /// Resolve by filter (without it, only count the reconciling matches and change nothing).
    #[arg(long)]
    pub yes: bool,
    /// With --yes and no filter: resolve every reconciling operation (refused without it).
    #[arg(long)]
    pub all: bool,
    /// The effect happened: the operation ends succeeded.
    #[arg(long)]
    pub applied: bool,
    /// The remote identity of the applied effect (a charge id, a message id).
    #[arg(long, value_name = "X")]
    pub remote_id: Option<String>,
    /// The effect did not happen: the operation is pending again, eligible now, safe to retry.
    #[arg(long)]
    pub not_applied: bool,
    /// Why (what was checked), for the audit log and the operation's decision.
    #[arg(long, value_name = "TEXT")]
    pub reason: Option<String>,
    #[command(flatten)]
    pub actor: ActorArgs,
    /// Print the result as JSON.
    #[arg(long)]
    pub json: bool,
}

/// One reconciling operation as listed.
#[derive(Debug, Serialize)]
struct Waiting {
    id: oprec::OperationId,
    kind: String,
    attempt: u32,
    /// When the attempt with the unknown outcome ended.
    since: Option<DateTime<Utc>>,
    /// When a reconcile hook looks again.
    next_look_at: DateTime<Utc>,
    last_error: Option<oprec::OperationError>,
    remote_id: Option<String>,
}

/// Lists reconciling operations, oldest first.
pub(crate) async fn list(global: &Global, args: ListArgs) -> anyhow::Result<()> {
    if args.limit == 0 || args.limit > 1_000 {
        return Err(bad("--limit must be between 1 and 1,000"));
    }
    let kind = args
        .kind
        .as_deref()
        .map(|k| filter::name("--kind", k))
        .transpose()?;
    let backend = Backend::open(global).await?;
    let store = backend.store.as_ref();
    let ops: Vec<Operation> = store
        .operation_list(ListParams {
            status: Some(Status::Reconciling),
            kind,
            limit: args.limit,
            ..Default::default()
        })
        .await
        .map_err(store_error)?;
    let mut waiting = Vec::with_capacity(ops.len());
    for o in ops {
        // The history says when the outcome became unknown; the row only when it was last touched.
        let since = store
            .operation_get(OperationGetParams { id: o.id })
            .await
            .map_err(store_error)?
            .and_then(|d| d.attempts.last().map(|a| a.ended_at));
        waiting.push(Waiting {
            id: o.id,
            kind: o.kind,
            attempt: o.attempt,
            since,
            next_look_at: o.next_eligible_at,
            last_error: o.last_error,
            remote_id: o.remote_id,
        });
    }
    if args.json {
        return output::json(&waiting);
    }
    if waiting.is_empty() {
        return output::line!("no operation is reconciling: no unknown outcome is waiting");
    }
    let mut t = Table::new(&["ID", "KIND", "ATTEMPT", "SINCE", "NEXT LOOK", "LAST ERROR"]);
    for w in &waiting {
        t.row(vec![
            w.id.to_string(),
            w.kind.clone(),
            w.attempt.to_string(),
            w.since.map(output::time).unwrap_or_else(|| "-".into()),
            output::time(w.next_look_at),
            cut(
                w.last_error.as_ref().map_or("-", |e| e.summary.as_str()),
                60,
            ),
        ]);
    }
    output::text(&t.render(""))?;
    output::line!(
        "decide one by hand with `oprec reconcile resolve ID --applied [--remote-id X]` or \
         `--not-applied`"
    )
}

/// Records a person's decision, about one operation or every reconciling match of filters.
pub(crate) async fn resolve(global: &Global, args: ResolveArgs) -> anyhow::Result<()> {
    let Some(id) = args.id.as_deref() else {
        return resolve_matching(global, args).await;
    };
    if filter::narrows(&args.filter.filter()?) || args.filter.limit.is_some() {
        return Err(bad(
            "give the operation either as an id or as filters, not both (--id is a filter too)",
        ));
    }
    let id = filter::id("operation id", id)?;
    if args.remote_id.is_some() && !args.applied {
        return Err(bad(
            "--remote-id goes with --applied: an effect that was not applied has no remote id",
        ));
    }
    let remote_id = match args.remote_id.as_deref().map(str::trim) {
        Some("") => return Err(bad("--remote-id must not be empty")),
        Some(r) if r.chars().count() > MAX_REMOTE_ID => {
            return Err(bad(format!(
                "--remote-id is longer than {MAX_REMOTE_ID} characters"
            )));
        }
        r => r.map(str::to_owned),
    };
    let reason = audit_trail::reason("--reason", args.reason.as_deref())?;
    let actor = args.actor.who()?;
    let resolution = if args.applied {
        Resolution::Applied {
            remote_id: remote_id.clone(),
        }
    } else {
        Resolution::NotApplied
    };
    let backend = Backend::open(global).await?;
    let who = actor;
    let status = match resolve_one(
        backend.store.as_ref(),
        id,
        resolution.clone(),
        &who,
        reason.as_deref(),
    )
    .await
    {
        Ok(done) => {
            audit_trail::check(done.audit_failure)?;
            done.status
        }
        Err(oprec::ops::Error::Store(oprec::Error::NotFound(_))) => {
            anyhow::bail!("operation {id} not found in {}", backend.url)
        }
        Err(e) => return Err(e.into()),
    };
    if args.json {
        return output::json(&json!({"id": id, "resolution": resolution, "status": status}));
    }
    match status {
        Status::Succeeded => output::line!(
            "{id}: applied; succeeded{}",
            remote_id
                .map(|r| format!(" with remote id {r}"))
                .unwrap_or_default()
        ),
        Status::Pending => output::line!("{id}: not applied; pending again, eligible now"),
        other => output::line!("{id}: not applied; now {other} (its attempts are used up)"),
    }
}

/// Resolves every reconciling match of the filters the same way, after a dry run.
async fn resolve_matching(global: &Global, args: ResolveArgs) -> anyhow::Result<()> {
    if args.remote_id.is_some() {
        return Err(bad(
            "--remote-id names one effect: resolve that operation by its id, not by filter",
        ));
    }
    let request = ResolveRequest {
        filter: args.filter.filter()?,
        resolution: if args.applied {
            Resolution::Applied { remote_id: None }
        } else {
            Resolution::NotApplied
        },
        limit: args.filter.limit()?,
    };
    if args.yes {
        filter::scope(
            &request.filter,
            args.all,
            "reconcile resolve",
            "reconciling",
            Spelling::Flags,
        )?;
    }
    let reason = audit_trail::reason("--reason", args.reason.as_deref())?;
    let who = args.actor.who()?;
    let backend = Backend::open(global).await?;
    let store = backend.store.as_ref();
    let review = request.review(store).await?;
    let decision = if args.applied {
        "applied"
    } else {
        "not applied"
    };
    if !args.yes {
        if args.json {
            return output::json(&json!({
                "action": "reconcile_resolve",
                "resolution": request.resolution,
                "matched": review.matching,
                "would_resolve": review.planned,
                "changed": false,
            }));
        }
        return output::line!(
            "{} reconciling operations match ({} would be resolved as {decision}); nothing was \
             changed: add --yes to resolve them",
            output::count(review.matching),
            output::count(review.planned),
        );
    }
    let bar = crate::progress::bar(review.planned, "resolved");
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
    let resolved = done.run.done;
    if let Some(e) = done.run.failure {
        return Err(store_error(e).context(format!(
            "stopped after resolving {} operations; run the same command again for the rest",
            output::count(resolved)
        )));
    }
    audit_trail::check(done.audit_failure)?;
    if args.json {
        return output::json(&json!({
            "action": "reconcile_resolve",
            "resolution": request.resolution,
            "count": resolved,
            "statuses": done.statuses,
            "changed": resolved > 0,
        }));
    }
    let statuses: Vec<String> = done
        .statuses
        .iter()
        .map(|(s, n)| format!("{} {s}", output::count(*n)))
        .collect();
    output::line!(
        "resolved {} operations as {decision}{}",
        output::count(resolved),
        if statuses.is_empty() {
            String::new()
        } else {
            format!(" (now {})", statuses.join(", "))
        }
    )
}
