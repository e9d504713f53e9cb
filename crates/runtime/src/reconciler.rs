//! The reconciler: operations whose last outcome was unknown are handed to their kind's reconcile
//! hook, which looks the effect up. Applied → succeeded with its remote id; not applied →
//! pending, safe to retry; still unknown → looked at again later. Kinds without a hook wait for an
//! operator (`oprec reconcile resolve`).

use std::sync::Arc;
use std::time::Duration;

use oprec_core::maintenance::{ReconcileDueParams, ReconcileResolveParams};
use oprec_core::{Clock, FullStore, Resolution, WorkerStore};
use serde::Serialize;
use tokio_util::sync::CancellationToken;

use crate::{Context, Reconciled, Registry};

/// How the reconciler runs.
#[derive(Clone, Debug)]
pub struct ReconcilerConfig {
    /// How often to look.
    pub interval: Duration,
    /// The most operations per pass.
    pub batch: u32,
    /// How long a hook may run (and how long another reconciler keeps off the operation).
    pub lease: chrono::Duration,
    /// When a hook still cannot tell, how long until it is asked again.
    pub retry_after: chrono::Duration,
    /// The name recorded as the resolver.
    pub actor: String,
}

impl Default for ReconcilerConfig {
    fn default() -> Self {
        ReconcilerConfig {
            interval: Duration::from_secs(5),
            batch: 100,
            lease: chrono::Duration::seconds(60),
            retry_after: chrono::Duration::minutes(5),
            actor: "reconciler".into(),
        }
    }
}

/// What one pass resolved.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ReconcileReport {
    /// Effects found applied (now succeeded).
    pub applied: u64,
    /// Effects found not applied (now pending again).
    pub not_applied: u64,
    /// Still unknown (asked again later).
    pub still_unknown: u64,
}

/// One pass over the reconciling operations of kinds that have a hook.
pub async fn reconcile_once(
    store: &Arc<dyn FullStore>,
    registry: &Registry,
    clock: &dyn Clock,
    config: &ReconcilerConfig,
) -> oprec_core::Result<ReconcileReport> {
    let kinds: Vec<String> = registry
        .kinds()
        .filter(|k| k.can_reconcile())
        .map(|k| k.name().to_owned())
        .collect();
    let mut report = ReconcileReport::default();
    if kinds.is_empty() {
        return Ok(report);
    }
    let due = store
        .operation_reconcile_due(ReconcileDueParams {
            kinds,
            limit: config.batch,
            lease: config.lease,
        })
        .await?;
    let as_store: Arc<dyn WorkerStore> = store.clone();
    for op in due {
        let Some(kind) = registry.get(&op.kind) else {
            continue;
        };
        // The hook holds no claim: writes through its context are refused as stale.
        let ctx = Context::for_reconcile(&op, as_store.clone());
        let budget = config.lease.to_std().unwrap_or(Duration::from_secs(60));
        let found = tokio::time::timeout(budget, kind.run_reconcile(ctx, op.payload.clone()))
            .await
            .ok()
            .flatten()
            .unwrap_or(Reconciled::StillUnknown);
        let resolution = match found {
            Reconciled::Applied { remote_id } => {
                report.applied += 1;
                Resolution::Applied { remote_id }
            }
            Reconciled::NotApplied => {
                report.not_applied += 1;
                Resolution::NotApplied
            }
            Reconciled::StillUnknown => {
                report.still_unknown += 1;
                Resolution::StillUnknown {
                    retry_at: clock.now() + config.retry_after,
                }
            }
        };
        // Core decides from the row what the resolution means; the write is fenced by the
        // operation still being reconciling.
        let settlement = resolution.settle(&op, &config.actor, clock.now());
        if let Err(e) = store
            .operation_reconcile_resolve(ReconcileResolveParams {
                id: op.id,
                settlement,
            })
            .await
        {
            // An operator may have resolved it meanwhile; that is their decision to keep.
            tracing::info!(operation = %op.id, error = %e, "reconcile result not recorded");
        }
    }
    Ok(report)
}

/// Runs passes until `stop` is cancelled.
pub(crate) async fn run(
    store: Arc<dyn FullStore>,
    registry: Arc<Registry>,
    clock: Arc<dyn Clock>,
    config: ReconcilerConfig,
    stop: CancellationToken,
) {
    loop {
        match reconcile_once(&store, &registry, clock.as_ref(), &config).await {
            Ok(r) if r.applied + r.not_applied + r.still_unknown > 0 => {
                tracing::info!(
                    applied = r.applied,
                    not_applied = r.not_applied,
                    still_unknown = r.still_unknown,
                    "reconciled unknown outcomes"
                );
            }
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "reconcile pass failed"),
        }
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(config.interval) => {}
        }
    }
}
