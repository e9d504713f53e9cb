//! Cancel: ends operations that have not started their last attempt (pending, held or
//! reconciling) as cancelled. A running operation is not cancellable (its attempt would write
//! over the decision), nor is a finished one; the result says which were not, with their status.

use oprec_core::operator::{AuditEntry, CancelParams};
use oprec_core::store::OperationGetParams;
use oprec_core::{OperationId, OperatorStore, Status};
use serde::Serialize;
use serde_json::json;

use crate::filter::MAX_IDS;
use crate::{InputError, Result, Who};

/// One operation that was not cancelled, and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct NotCancelled {
    /// The operation.
    pub id: OperationId,
    /// Its status (running or terminal), or `None` when there is no such operation.
    pub status: Option<Status>,
}

/// What a cancel did.
#[derive(Debug, Default)]
pub struct Cancelled {
    /// Cancelled, in the order asked for.
    pub cancelled: Vec<OperationId>,
    /// Not cancelled, with their status.
    pub not_cancelled: Vec<NotCancelled>,
    /// The audit entry could not be written (the cancel itself stands).
    pub audit_failure: Option<oprec_core::Error>,
}

/// Cancels `ids` (repeats count once), audited as `who` with `reason`.
pub async fn cancel<S: OperatorStore + ?Sized>(
    store: &S,
    ids: &[OperationId],
    who: &Who,
    reason: Option<&str>,
) -> Result<Cancelled> {
    if ids.len() > MAX_IDS {
        return Err(InputError(format!("at most {MAX_IDS} operations per cancel")).into());
    }
    let mut asked: Vec<OperationId> = Vec::with_capacity(ids.len());
    for id in ids {
        if !asked.contains(id) {
            asked.push(*id);
        }
    }
    let cancelled = store
        .operation_cancel(CancelParams { ids: asked.clone() })
        .await?;
    let mut not_cancelled = Vec::new();
    for id in asked.iter().filter(|id| !cancelled.contains(id)) {
        let status = store
            .operation_get(OperationGetParams { id: *id })
            .await?
            .map(|d| d.operation.status);
        not_cancelled.push(NotCancelled { id: *id, status });
    }
    let audit_failure = if cancelled.is_empty() {
        None
    } else {
        store
            .audit_insert(AuditEntry {
                actor: who.actor.clone(),
                action: "cancel".to_owned(),
                filter: json!({"ids": asked}),
                affected: cancelled.len() as u64,
                reason: reason.map(str::to_owned),
                details: who.details(json!({
                    "not_cancelled": not_cancelled
                        .iter()
                        .map(|n| json!({"id": n.id, "status": status_text(n.status)}))
                        .collect::<Vec<_>>(),
                })),
            })
            .await
            .err()
    };
    Ok(Cancelled {
        cancelled,
        not_cancelled,
        audit_failure,
    })
}

/// A status as reported for an operation that was not cancelled.
pub fn status_text(status: Option<Status>) -> &'static str {
    status.map_or("not found", |s| s.as_str())
}
