//! `oprec cancel ID...`: ends operations that have not started their last attempt (pending, held
//! or reconciling) as cancelled. A running operation is not cancellable (its attempt would write
//! over the decision), nor is a finished one; the command says which were not, with their status,
//! and exits 1 if any was not cancelled. The work is the operator library's
//! ([`oprec::ops::cancel`]).

use clap::Args;
use oprec::OperationId;
use oprec::ops::cancel::{cancel, status_text};
use oprec::ops::filter::{self, MAX_IDS};
use serde_json::json;

use crate::audit_trail::{self, ActorArgs};
use crate::backend::Backend;
use crate::cli::Global;
use crate::output::{self, count};

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
    let ids = args
        .ids
        .iter()
        .map(|text| filter::id("operation id", text))
        .collect::<Result<Vec<OperationId>, _>>()?;
    let reason = audit_trail::reason("--reason", args.reason.as_deref())?;
    let who = args.actor.who()?;
    let backend = Backend::connect(&global.database_url).await?;
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
