//! `oprec transport purge` and `oprec transport depth`: the broker's wake-ups, which are only a
//! doorbell, per kind (each kind has a stream or queue of its own). Purging drops them, of one
//! kind (`--kind`) or of all; the operations stay in the store and the scheduler re-wakes the
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
use crate::output::{self, Table, count};

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

/// A broker that did not answer a depth read (a runtime failure, exit 1), named without its
/// password.
fn depth_failed(e: oprec::Error, shown: &str) -> anyhow::Error {
    anyhow::Error::new(e).context(format!("reading the depth of {shown} failed"))
}

/// Drops every waiting wake-up, then counts what is still pending in the store.
pub(crate) async fn purge(global: &Global, args: PurgeArgs) -> anyhow::Result<()> {
    let (transport, shown) = broker(global, "purge")?;
    if let Some(kind) = &args.kind {
        oprec::transport::check_kind(kind).map_err(|e| bad(format!("--kind: {e}")))?;
    }
    let what = match &args.kind {
        Some(kind) => format!("every {kind} wake-up"),
        None => "every wake-up, of every kind,".to_owned(),
    };
    if !args.yes {
        // A dry run, like every other command that changes things without --yes: say what would
        // go, change nothing, exit 0.
        if args.kind.is_none() {
            know_store_kinds(global, transport.as_ref()).await;
        }
        let waiting = transport
            .depth(args.kind.as_deref())
            .await
            .map_err(|e| depth_failed(e, &shown))?;
        if args.json {
            return output::json(&json!({
                "transport": shown,
                "kind": args.kind,
                "dry_run": true,
                "would_purge": waiting,
            }));
        }
        output::line!(
            "dry run: purging would drop {what} waiting on {shown} ({} now); the operations \
             stay pending in the store and the scheduler wakes them again. Nothing was changed: \
             add --yes to purge",
            count(waiting)
        )?;
        return Ok(());
    }
    let who = args.actor.who()?;
    // The store first: the report that no intent was lost needs it, so check it before purging.
    let backend = Backend::open(global).await?;
    backend.ensure_schema().await?;
    let kind = args.kind.as_deref();
    let done = match workflow::purge(
        backend.store.as_ref(),
        transport.as_ref(),
        &shown,
        kind,
        &who,
    )
    .await
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
            "kind": kind,
            "purged": purged,
            "pending": pending,
            "rewake": done.rewake,
        }));
    }
    let of = kind.map(|k| format!(" {k}")).unwrap_or_default();
    let (ops, are) = if pending == 1 {
        ("operation", "is")
    } else {
        ("operations", "are")
    };
    output::line!(
        "purged {}{of} wake-ups; {}{of} {ops} {are} still pending in the store: no intent was \
         lost; the scheduler wakes them again on its next pass",
        count(purged),
        count(pending)
    )?;
    Ok(())
}

/// Prints how many wake-ups wait on the broker: of one kind, or of every kind, one row each.
pub(crate) async fn depth(global: &Global, args: DepthArgs) -> anyhow::Result<()> {
    let (transport, shown) = broker(global, "measure")?;
    let failed = |e| depth_failed(e, &shown);
    if let Some(kind) = &args.kind {
        oprec::transport::check_kind(kind).map_err(|e| bad(format!("--kind: {e}")))?;
        let depth = transport.depth(Some(kind)).await.map_err(failed)?;
        return if args.json {
            output::json(&json!({"transport": shown, "kind": kind, "depth": depth}))
        } else {
            output::line!("{} {kind} wake-ups waiting on {shown}", count(depth))?;
            Ok(())
        };
    }
    know_store_kinds(global, transport.as_ref()).await;
    let mut kinds = transport.depths().await.map_err(failed)?;
    kinds.sort_by(|a, b| a.kind.cmp(&b.kind));
    let depth: u64 = kinds.iter().map(|k| k.depth).sum();
    if args.json {
        return output::json(&json!({"transport": shown, "depth": depth, "kinds": kinds}));
    }
    output::line!("{} wake-ups waiting on {shown}", count(depth))?;
    if !kinds.is_empty() {
        let mut table = Table::new(&["KIND", "WAITING"]);
        for k in &kinds {
            table.row(vec![k.kind.clone(), count(k.depth)]);
        }
        output::text(&table.render("  "))?;
    }
    Ok(())
}

/// A broker that cannot list its queues (AMQP) learns the kinds from the store, when one is
/// reachable: every kind with operations there may have wake-ups waiting. Best effort: without
/// the store, the depth covers the kinds the broker itself knows.
async fn know_store_kinds(global: &Global, transport: &dyn Transport) {
    if transport.name() != "amqp" {
        return;
    }
    let known = async {
        let backend = Backend::open(global).await?;
        workflow::know_store_kinds(backend.store.as_ref(), transport).await?;
        anyhow::Ok(())
    };
    if let Err(e) = known.await {
        tracing::warn!(error = %format!("{e:#}"), "the store's kinds are unknown; the depth covers the kinds the broker was told of");
    }
}
