//! `oprec cancel ID...`: ends operations that have not started their last attempt (pending, held
//! or reconciling) as cancelled. A running operation is not cancellable (its attempt would write
//! over the decision), nor is a finished one; the command says which were not, with their status,
//! and exits 1 if any was not cancelled.

use std::collections::HashSet;

use clap::Args;
use oprec::OperationId;
use oprec::operator::AuditEntry;
use serde_json::json;

use crate::audit_trail::{self, ActorArgs};
use crate::backend::{Backend, store_error};
use crate::cli::Global;
use crate::filter;
use crate::output::{self, count};

/// The most ids one command takes.
const MAX_IDS: usize = 10_000;

/// `oprec cancel`.
#[derive(Debug, Args)]
pub(crate) struct CancelArgs {
    /// The operations to cancel (UUIDs).
    #[arg(value_name = "ID", required = true)]
    pub ids: Vec<String>,
    /// Why, for the audit log.
    #[arg(long, value_name = "TEXT")]
    pub reason: Option<String>,
    #[command(flatten)]
    pub actor: ActorArgs,
    /// Print the result as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Cancels what can be cancelled and reports the rest.
pub(crate) async fn run(global: &Global, args: CancelArgs) -> anyhow::Result<()> {
    if args.ids.len() > MAX_IDS {
        return Err(crate::exit::bad(format!(
            "at most {MAX_IDS} ids per command"
        )));
    }
    let mut ids: Vec<OperationId> = Vec::with_capacity(args.ids.len());
    for text in &args.ids {
        let id = filter::id("operation id", text)?;
        if !ids.contains(&id) {
            ids.push(id);
        }
    }
    let reason = audit_trail::reason("--reason", args.reason.as_deref())?;
    let actor = args.actor.name()?;
    let backend = Backend::connect(&global.database_url).await?;
    let store = backend.store.as_ref();
    let cancelled: HashSet<OperationId> = store
        .operation_cancel(ids.clone())
        .await
        .map_err(store_error)?
        .into_iter()
        .collect();
    let mut refused = Vec::new();
    for id in ids.iter().filter(|id| !cancelled.contains(id)) {
        let status = store
            .operation_get(*id)
            .await
            .map_err(store_error)?
            .map(|d| d.operation.status.to_string())
            .unwrap_or_else(|| "not found".to_owned());
        refused.push((*id, status));
    }
    let done: Vec<OperationId> = ids
        .iter()
        .copied()
        .filter(|id| cancelled.contains(id))
        .collect();
    if !done.is_empty() {
        audit_trail::record(
        store,
        AuditEntry {
            actor,
            action: "cancel".to_owned(),
            filter: json!({"ids": ids}),
            affected: done.len() as u64,
            reason,
            details: json!({
                "not_cancelled": refused.iter().map(|(id, s)| json!({"id": id, "status": s})).collect::<Vec<_>>(),
            }),
        },
    )
    .await?;
    }

    if args.json {
        output::json(&json!({
            "cancelled": done,
            "not_cancelled": refused.iter().map(|(id, s)| json!({"id": id, "status": s})).collect::<Vec<_>>(),
        }))?;
    } else {
        if !done.is_empty() {
            output::line!("cancelled {}:", count(done.len() as u64))?;
            for id in &done {
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
            count(ids.len() as u64)
        )
    }
}
