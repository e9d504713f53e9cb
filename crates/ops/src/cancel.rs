//! Cancel: ends operations that have not started their last attempt (pending, held or
//! reconciling) as cancelled. A running operation is not cancellable (its attempt would write
//! over the decision), nor is a finished one; the result says which were not, with their status.
//! Named by id ([`cancel`]) or by filter ([`CancelRequest`]: counted first, then cancelled in
//! batches, then audited, as quarantine and release are).

use std::collections::BTreeMap;

use oprec_core::operator::{AuditEntry, CancelParams, CountMatchingParams, OperationFilter};
use oprec_core::store::{ListParams, OperationGetParams};
use oprec_core::{OperationId, OperatorStore, Status};
use serde::Serialize;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::batches::{self, Batches, DEFAULT_BATCH};
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

/// The statuses a cancel ends: work that has not started its last attempt.
pub const CANCELLABLE: [Status; 3] = [Status::Pending, Status::Held, Status::Reconciling];

/// A cancel by filter: every cancellable operation the filter matches, or at most `limit`.
#[derive(Clone, Debug, PartialEq)]
pub struct CancelRequest {
    /// Which operations.
    pub filter: OperationFilter,
    /// At most this many.
    pub limit: Option<u64>,
}

/// What a cancel by filter would touch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CancelReview {
    /// Matches that can be cancelled (pending, held or reconciling).
    pub matching: u64,
    /// How many would be cancelled (the matches, capped by the limit).
    pub planned: u64,
    /// Every match, per status: running and finished ones are left alone.
    pub counts: BTreeMap<Status, u64>,
}

/// What a cancel by filter did.
#[derive(Debug)]
pub struct CancelDone {
    /// The batches: how many were cancelled, whether it was interrupted or failed.
    pub run: Batches,
    /// The audit entry could not be written (the cancel itself stands).
    pub audit_failure: Option<oprec_core::Error>,
}

impl CancelRequest {
    /// How many operations match, per status, and so how many would be cancelled.
    pub async fn review<S: OperatorStore + ?Sized>(&self, store: &S) -> Result<CancelReview> {
        let counts = store
            .operation_count_matching(CountMatchingParams {
                filter: self.filter.clone(),
            })
            .await?;
        let matching = CANCELLABLE
            .iter()
            .map(|s| counts.get(s).copied().unwrap_or(0))
            .sum();
        Ok(CancelReview {
            planned: self.limit.map_or(matching, |l| l.min(matching)),
            matching,
            counts,
        })
    }

    /// Cancels in batches (each lists cancellable matches, then cancels them by id, so an
    /// operation claimed meanwhile is left to finish its attempt) until `limit` are cancelled or
    /// none are left, stopping between two batches when `stop` is cancelled; audits what was
    /// cancelled, with the filter. `on_batch` sees how many each batch cancelled.
    pub async fn apply<S: OperatorStore + ?Sized>(
        &self,
        store: &S,
        who: &Who,
        reason: Option<&str>,
        stop: &CancellationToken,
        mut on_batch: impl FnMut(u64),
    ) -> CancelDone {
        let run = batches::run(
            self.limit.unwrap_or(u64::MAX),
            DEFAULT_BATCH,
            stop,
            |_, limit| async move {
                let mut ids = Vec::new();
                for status in CANCELLABLE {
                    let left = limit.saturating_sub(ids.len() as u32);
                    if left == 0 {
                        break;
                    }
                    let page = store
                        .operation_list(ListParams {
                            status: Some(status),
                            filter: self.filter.clone(),
                            limit: left,
                            ..ListParams::default()
                        })
                        .await?;
                    ids.extend(page.into_iter().map(|o| o.id));
                }
                if ids.is_empty() {
                    return Ok(Vec::new());
                }
                store.operation_cancel(CancelParams { ids }).await
            },
            |done: &Vec<OperationId>| on_batch(done.len() as u64),
        )
        .await;
        let audit_failure = if run.done > 0 {
            store
                .audit_insert(AuditEntry {
                    actor: who.actor.clone(),
                    action: "cancel".to_owned(),
                    filter: serde_json::to_value(&self.filter).unwrap_or(json!({})),
                    affected: run.done,
                    reason: reason.map(str::to_owned),
                    details: who.details(json!({"limit": self.limit, "complete": run.complete()})),
                })
                .await
                .err()
        } else {
            None
        };
        CancelDone { run, audit_failure }
    }
}
