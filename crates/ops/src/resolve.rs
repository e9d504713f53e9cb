//! Resolve: a person (or a front end on their behalf) records what became of an unknown outcome.
//! Core decides from the operation's row what the resolution means
//! ([`Resolution::settle`](oprec_core::Resolution::settle)); the store writes it, fenced by the
//! operation still being reconciling; the decision is audited. One operation by id
//! ([`resolve`]), or every reconciling match of a filter ([`ResolveRequest`]: counted first, then
//! resolved in batches, then audited once).

use std::collections::BTreeMap;

use oprec_core::maintenance::ReconcileResolveParams;
use oprec_core::operator::{AuditEntry, CountMatchingParams, OperationFilter};
use oprec_core::store::{ListParams, OperationGetParams};
use oprec_core::{Error, MaintenanceStore, OperationId, OperatorStore, Resolution, Status};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::batches::{self, Batches, DEFAULT_BATCH};
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

/// A resolution by filter: every reconciling operation the filter matches (or at most `limit`)
/// settled the same way, as a person who checked them together found.
#[derive(Clone, Debug, PartialEq)]
pub struct ResolveRequest {
    /// Which operations (only reconciling ones are touched).
    pub filter: OperationFilter,
    /// What became of them.
    pub resolution: Resolution,
    /// At most this many.
    pub limit: Option<u64>,
}

/// What a resolution by filter would touch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResolveReview {
    /// Reconciling matches.
    pub matching: u64,
    /// How many would be resolved (the matches, capped by the limit).
    pub planned: u64,
    /// Every match, per status: the ones not reconciling are left alone.
    pub counts: BTreeMap<Status, u64>,
}

/// What a resolution by filter did.
#[derive(Debug)]
pub struct ResolvedMany {
    /// The batches: how many were resolved, whether it was interrupted or failed.
    pub run: Batches,
    /// How many ended in each status (succeeded; pending, or dead when their attempts are used
    /// up).
    pub statuses: BTreeMap<Status, u64>,
    /// The audit entry could not be written (the resolutions stand).
    pub audit_failure: Option<oprec_core::Error>,
}

impl ResolveRequest {
    /// How many operations match, per status, and so how many would be resolved.
    pub async fn review<S: OperatorStore + ?Sized>(&self, store: &S) -> Result<ResolveReview> {
        let counts = store
            .operation_count_matching(CountMatchingParams {
                filter: self.filter.clone(),
            })
            .await?;
        let matching = counts.get(&Status::Reconciling).copied().unwrap_or(0);
        Ok(ResolveReview {
            planned: self.limit.map_or(matching, |l| l.min(matching)),
            matching,
            counts,
        })
    }

    /// Resolves in batches (each lists reconciling matches; core settles each one, and the store
    /// writes it fenced by the operation still being reconciling, so one a hook settled
    /// meanwhile is skipped) until `limit` are resolved or none are left, stopping between two
    /// batches when `stop` is cancelled; audits what was resolved, with the filter. `on_batch`
    /// sees how many each batch resolved.
    pub async fn apply<S: OperatorStore + MaintenanceStore + ?Sized>(
        &self,
        store: &S,
        who: &Who,
        reason: Option<&str>,
        stop: &CancellationToken,
        mut on_batch: impl FnMut(u64),
    ) -> ResolvedMany {
        let mut statuses: BTreeMap<Status, u64> = BTreeMap::new();
        let run = batches::run(
            self.limit.unwrap_or(u64::MAX),
            DEFAULT_BATCH,
            stop,
            |_, limit| async move {
                let page = store
                    .operation_list(ListParams {
                        status: Some(Status::Reconciling),
                        filter: self.filter.clone(),
                        limit,
                        ..ListParams::default()
                    })
                    .await?;
                let now = store.now().await?;
                let mut done = Vec::with_capacity(page.len());
                for op in page {
                    let settlement = self.resolution.settle(&op, &who.actor, now);
                    match store
                        .operation_reconcile_resolve(ReconcileResolveParams {
                            id: op.id,
                            settlement,
                        })
                        .await
                    {
                        Ok(status) => done.push(status),
                        // Settled meanwhile (a hook, another person): no longer reconciling.
                        Err(Error::InvalidInput(_)) => {}
                        Err(e) => return Err(e),
                    }
                }
                Ok(done)
            },
            |done: &Vec<Status>| {
                for s in done {
                    *statuses.entry(*s).or_default() += 1;
                }
                on_batch(done.len() as u64);
            },
        )
        .await;
        let audit_failure = if run.done > 0 {
            store
                .audit_insert(AuditEntry {
                    actor: who.actor.clone(),
                    action: "reconcile_resolve".to_owned(),
                    filter: serde_json::to_value(&self.filter).unwrap_or(json!({})),
                    affected: run.done,
                    reason: reason.map(str::to_owned),
                    details: who.details(json!({
                        "resolution": self.resolution,
                        "statuses": statuses,
                        "limit": self.limit,
                        "complete": run.complete(),
                    })),
                })
                .await
                .err()
        } else {
            None
        };
        ResolvedMany {
            run,
            statuses,
            audit_failure,
        }
    }
}
