//! `oprec transport purge` and `oprec transport depth`: the broker's wake-ups, which are only a
//! doorbell. Purging drops them; the operations stay in the store and the scheduler re-wakes the
//! eligible ones, so the purge report says how many operations are still pending. The purge is
//! the operator library's ([`oprec::ops::purge`]), audited as the dashboard's is.

use std::sync::Arc;

use oprec::Transport;
use oprec::ops::purge as workflow;
use serde_json::json;

use crate::audit_trail;
use crate::backend::{self, Backend};
use crate::cli::{DepthArgs, Global, PurgeArgs};
use crate::exit::bad;
use crate::output::{self, count};

/// The broker `--transport` names, or why there is none to act on (exit 2).
fn broker(global: &Global, action: &str) -> anyhow::Result<(Arc<dyn Transport>, String)> {
    let shown = oprec::redact_url(&global.transport);
    if global.transport.starts_with("memory:") {
        return Err(bad(format!(
            "--transport {shown} is a queue inside one process; there is no broker to {action} from \
             here (give a redis:// or amqp:// URL)"
        )));
    }
    match backend::transport(&global.transport)? {
        Some(t) => Ok((t, shown)),
        None => Err(bad(format!(
            "--transport is {shown}: there is no broker to {action}; workers poll the store, and \
             every operation is there (give a redis:// or amqp:// URL)"
        ))),
    }
}

/// Drops every waiting wake-up, then counts what is still pending in the store.
pub(crate) async fn purge(global: &Global, args: PurgeArgs) -> anyhow::Result<()> {
    let (transport, shown) = broker(global, "purge")?;
    if !args.yes {
        return Err(bad(format!(
            "refusing to purge without --yes: this would drop every wake-up waiting on {shown}; \
             the operations stay pending in the store and the scheduler wakes them again"
        )));
    }
    let who = args.actor.who()?;
    // The store first: the report that no intent was lost needs it, so check it before purging.
    let backend = Backend::connect(&global.database_url).await?;
    backend.ensure_schema().await?;
    let done = match workflow::purge(backend.store.as_ref(), transport.as_ref(), &shown, &who).await
    {
        Ok(done) => done,
        Err(oprec::ops::Error::Transport(e)) => {
            return Err(anyhow::Error::new(e).context(format!("purging {shown} failed")));
        }
        Err(e) => return Err(e.into()),
    };
    audit_trail::check(done.audit_failure)?;
    let (purged, pending) = (done.purged, done.pending_in_store);
    if args.json {
        return output::json(&json!({
            "transport": shown,
            "purged": purged,
            "pending": pending,
            "rewake": done.rewake,
        }));
    }
    let (ops, are) = if pending == 1 {
        ("operation", "is")
    } else {
        ("operations", "are")
    };
    output::line!(
        "purged {} wake-ups; {} {ops} {are} still pending in the store: no intent was lost; \
         the scheduler wakes them again on its next pass",
        count(purged),
        count(pending)
    )?;
    Ok(())
}

/// Prints how many wake-ups wait on the broker.
pub(crate) async fn depth(global: &Global, args: DepthArgs) -> anyhow::Result<()> {
    let (transport, shown) = broker(global, "measure")?;
    let depth = transport.depth().await.map_err(|e| {
        anyhow::Error::new(e).context(format!("reading the depth of {shown} failed"))
    })?;
    if args.json {
        output::json(&json!({"transport": shown, "depth": depth}))
    } else {
        output::line!("{} wake-ups waiting on {shown}", count(depth))?;
        Ok(())
    }
}
