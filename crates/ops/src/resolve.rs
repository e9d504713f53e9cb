//! Resolve: a person (or a front end on their behalf) records what became of an unknown outcome.
//! Core decides from the operation's row what the resolution means
//! ([`Resolution::settle`](oprec_core::Resolution::settle)); the store writes it, fenced by the
//! operation still being reconciling; the decision is audited.

use oprec_core::maintenance::ReconcileResolveParams;
use oprec_core::operator::AuditEntry;
use oprec_core::store::OperationGetParams;
use oprec_core::{Error, MaintenanceStore, OperationId, OperatorStore, Resolution, Status};
use serde_json::json;

use crate::{Result, Who};

/// The longest remote id accepted.
pub const MAX_REMOTE_ID: usize = 500;

/// What a resolution did.
#[derive(Debug)]
pub struct Resolved {
    /// The operation's new status.
    pub status: Status,
    /// The audit entry could not be written (the resolution itself stands).
    pub audit_failure: Option<oprec_core::Error>,
}

/// Resolves the reconciling operation `id` as `resolution`, decided by `who` for `reason`.
/// [`Error::NotFound`] when there is no such operation, [`Error::InvalidInput`] when it is not
/// reconciling.
pub async fn resolve<S: OperatorStore + MaintenanceStore + ?Sized>(
    store: &S,
    id: OperationId,
    resolution: Resolution,
    who: &Who,
    reason: Option<&str>,
) -> Result<Resolved> {
    let op = store
        .operation_get(OperationGetParams { id })
        .await?
        .ok_or(Error::NotFound(id))?
        .operation;
    let settlement = resolution.settle(&op, &who.actor, store.now().await?);
    let status = store
        .operation_reconcile_resolve(ReconcileResolveParams { id, settlement })
        .await?;
    let audit_failure = store
        .audit_insert(AuditEntry {
            actor: who.actor.clone(),
            action: "reconcile_resolve".to_owned(),
            filter: json!({"ids": [id]}),
            affected: 1,
            reason: reason.map(str::to_owned),
            details: who.details(json!({"resolution": resolution, "status": status})),
        })
        .await
        .err();
    Ok(Resolved {
        status,
        audit_failure,
    })
}
