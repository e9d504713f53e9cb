//! Purge: dropping every wake-up waiting on the broker. The broker is only a doorbell: the
//! operations stay in the store, and the purge marks the pending ones never woken, so the
//! scheduler rebuilds the backlog on its next pass (within about a second, not after the re-wake
//! interval). The result says how many are still pending there (checked before the purge, so that
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

/// Pending operations in the store.
async fn pending<S: OperatorStore + ?Sized>(store: &S) -> Result<u64> {
    Ok(store
        .operation_count()
        .await?
        .iter()
        .filter(|r| r.status == Status::Pending)
        .map(|r| r.count)
        .sum())
}

/// Purges `transport` (named `name` in the audit log), audited as `who`.
pub async fn purge<S: OperatorStore + MaintenanceStore + ?Sized>(
    store: &S,
    transport: &dyn Transport,
    name: &str,
    who: &Who,
) -> Result<Purged> {
    // The store first: the report that no intent was lost needs it.
    pending(store).await?;
    let purged = transport.purge().await.map_err(Error::Transport)?;
    // The wake-ups the pending operations were marked for are gone: mark them never woken, so
    // the scheduler publishes them again on its next pass instead of after the re-wake interval.
    let rewake = store
        .operation_wake_reset(WakeResetParams::default())
        .await?;
    let pending_in_store = pending(store).await?;
    let audit_failure = store
        .audit_insert(AuditEntry {
            actor: who.actor.clone(),
            action: "transport_purge".to_owned(),
            filter: json!({"transport": name}),
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
