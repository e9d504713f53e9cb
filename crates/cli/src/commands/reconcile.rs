//! `oprec reconcile list` and `oprec reconcile resolve`: unknown outcomes (a timeout after the
//! request was written) wait in reconciling, never retried blindly. Workers ask kinds' reconcile
//! hooks; these commands show what is waiting and record a human decision: applied (succeeded,
//! with the remote id when known) or not applied (pending again, safe to retry).

use chrono::{DateTime, Utc};
use clap::{ArgGroup, Args, Subcommand};
use oprec::ops::filter;
use oprec::ops::resolve::{MAX_REMOTE_ID, resolve as resolve_one};
use oprec::store::{ListParams, OperationGetParams};
use oprec::{Operation, Resolution, Status};
use serde::Serialize;
use serde_json::json;

use crate::audit_trail::{self, ActorArgs};
use crate::backend::{Backend, store_error};
use crate::cli::Global;
use crate::exit::bad;
use crate::output::{self, Table, cut};

/// `oprec reconcile ...`.
#[derive(Debug, Subcommand)]
pub(crate) enum ReconcileCommand {
    /// Operations whose outcome is unknown, waiting for their kind's reconcile hook or a person.
    List(ListArgs),
    /// Record what a person found: the effect was applied, or it was not.
    Resolve(ResolveArgs),
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
pub(crate) struct ResolveArgs {
    /// The operation (reconciling).
    #[arg(value_name = "ID")]
    pub id: String,
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
    last_error: Option<String>,
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
    let backend = Backend::connect(&global.database_url).await?;
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
            last_error: o.last_error.map(|e| e.summary),
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
            cut(w.last_error.as_deref().unwrap_or("-"), 60),
        ]);
    }
    output::text(&t.render(""))?;
    output::line!(
        "decide one by hand with `oprec reconcile resolve ID --applied [--remote-id X]` or \
         `--not-applied`"
    )
}

/// Records a person's decision.
pub(crate) async fn resolve(global: &Global, args: ResolveArgs) -> anyhow::Result<()> {
    let id = filter::id("operation id", &args.id)?;
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
    let backend = Backend::connect(&global.database_url).await?;
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
