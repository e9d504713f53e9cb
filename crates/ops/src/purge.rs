//! Purge: dropping the wake-ups waiting on the broker, of one kind or of every kind. The broker
//! is only a doorbell: the operations stay in the store, and the purge marks the pending ones (of
//! that kind) never woken, so the scheduler rebuilds the backlog on its next pass (within about a
//! second, not after the re-wake interval). The result says how many are still pending there
//! (checked before the purge, so that
//! a store that cannot answer stops it), and the purge is audited.

use oprec_core::maintenance::WakeResetParams;
use oprec_core::operator::AuditEntry;
use oprec_core::{MaintenanceStore, OperatorStore, Status, Transport};
use serde_json::json;

use crate::{Error, Result, Who};

/// What a purge did.
#[derive(Debug)]
pub struct Purged {
    /// Wake-ups dropped.
    pub purged: u64,
    /// Operations still pending in the store after it: no intent was lost.
    pub pending_in_store: u64,
    /// Pending operations marked never woken, so that the scheduler wakes them on its next pass.
    pub rewake: u64,
    /// The audit entry could not be written (the purge itself stands).
    pub audit_failure: Option<oprec_core::Error>,
}

/// Pending operations in the store, of `kind` or of every kind.
async fn pending<S: OperatorStore + ?Sized>(store: &S, kind: Option<&str>) -> Result<u64> {
    Ok(store
        .operation_count()
        .await?
        .iter()
        .filter(|r| r.status == Status::Pending && kind.is_none_or(|k| k == r.kind))
        .map(|r| r.count)
        .sum())
}

/// Tells `transport` every kind the store has operations of, so that a broker that cannot list
/// its queues (AMQP) counts and purges them too when asked for every kind.
pub async fn know_store_kinds<S: OperatorStore + ?Sized>(
    store: &S,
    transport: &dyn Transport,
) -> Result<()> {
    let kinds: std::collections::BTreeSet<String> = store
        .operation_count()
        .await?
        .into_iter()
        .map(|r| r.kind)
        .collect();
    transport.know_kinds(&kinds.into_iter().collect::<Vec<_>>());
    Ok(())
}

/// Purges `transport` (named `name` in the audit log) of `kind`'s wake-ups, or of every kind's
/// (every kind the broker lists and the store has operations of), audited as `who`.
pub async fn purge<S: OperatorStore + MaintenanceStore + ?Sized>(
    store: &S,
    transport: &dyn Transport,
    name: &str,
    kind: Option<&str>,
    who: &Who,
) -> Result<Purged> {
    // The store first: the report that no intent was lost needs it.
    pending(store, kind).await?;
    if kind.is_none() {
        know_store_kinds(store, transport).await?;
    }
    let purged = transport.purge(kind).await.map_err(Error::Transport)?;
    // The wake-ups the pending operations were marked for are gone: mark them never woken, so
    // the scheduler publishes them again on its next pass instead of after the re-wake interval.
    let rewake = store
        .operation_wake_reset(WakeResetParams {
            kinds: kind.map(|k| vec![k.to_owned()]).unwrap_or_default(),
            ids: Vec::new(),
        })
        .await?;
    let pending_in_store = pending(store, kind).await?;
    let audit_failure = store
        .audit_insert(AuditEntry {
            actor: who.actor.clone(),
            action: "transport_purge".to_owned(),
            filter: match kind {
                Some(kind) => json!({"transport": name, "kind": kind}),
                None => json!({"transport": name}),
            },
            affected: purged,
            reason: None,
            details: who.details(json!({"pending_in_store": pending_in_store, "rewake": rewake})),
        })
        .await
        .err();
    Ok(Purged {
        purged,
        pending_in_store,
        rewake,
        audit_failure,
    })
}
