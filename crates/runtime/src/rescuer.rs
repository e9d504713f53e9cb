//! The rescuer: expired leases become vanished attempts (and, K in a row, a crash loop ends dead);
//! waiting operations past their deadline end dead.
//!
//! The store lists the expired claims; core decides each one ([`Transition::vanished`]); the
//! store applies the decisions, each fenced by its claim token and by the lease still being
//! expired, so a worker that heartbeats or finishes meanwhile wins and two rescuers never record
//! the same vanished attempt twice.

use std::sync::Arc;
use std::time::Duration;

use oprec_core::maintenance::{EndPastDeadlineParams, LeaseExpiredListParams, RescueManyParams};
use oprec_core::store::{CompleteParams, CompleteResult};
use oprec_core::{MaintenanceStore, Status, Transition, VanishRule};
use serde::Serialize;
use tokio_util::sync::CancellationToken;

use crate::tally::Tally;

use crate::Stats;

/// What the rescuer needs to know.
#[derive(Clone, Debug)]
pub struct RescuerConfig {
    /// How often to look.
    pub interval: Duration,
    /// Vanished attempts in a row before an operation is dead (crash_loop), and how long a
    /// rescued operation waits before it may run again.
    pub rule: VanishRule,
    /// The most operations handled per pass.
    pub batch: u32,
}

impl Default for RescuerConfig {
    fn default() -> Self {
        RescuerConfig {
            interval: Duration::from_secs(5),
            rule: VanishRule::default(),
            batch: 1000,
        }
    }
}

/// What one rescue pass did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct RescueReport {
    /// Expired claims recorded as vanished attempts.
    pub vanished: u64,
    /// Of those, operations pending again.
    pub retried: u64,
    /// Of those, operations ended dead (crash_loop, attempts_exhausted or deadline_passed).
    pub dead: u64,
    /// Waiting operations ended dead because their deadline passed.
    pub past_deadline: u64,
}

/// One pass: rescues the expired claims and ends what is past its deadline.
pub async fn rescue_once(
    store: &dyn MaintenanceStore,
    config: &RescuerConfig,
    stats: &Stats,
) -> oprec_core::Result<RescueReport> {
    rescue_pass(store, config, stats, None).await
}

/// [`rescue_once`], counting the promotions to dead it writes in the worker's labelled counts.
async fn rescue_pass(
    store: &dyn MaintenanceStore,
    config: &RescuerConfig,
    stats: &Stats,
    tally: Option<&Tally>,
) -> oprec_core::Result<RescueReport> {
    let mut r = RescueReport::default();
    let expired = store
        .operation_lease_expired_list(LeaseExpiredListParams {
            limit: config.batch,
        })
        .await?;
    if !expired.is_empty() {
        let now = store.now().await?;
        let rescues: Vec<CompleteParams> = expired
            .iter()
            .map(|claim| CompleteParams {
                id: claim.id,
                claim_token: claim.claim_token(),
                transition: Transition::vanished(claim, &config.rule, now),
            })
            .collect();
        let transitions: Vec<Transition> = rescues.iter().map(|p| p.transition.clone()).collect();
        let results = store
            .operation_rescue_many(RescueManyParams { rescues })
            .await?;
        let mut dead_written = Vec::new();
        for ((result, t), claim) in results.into_iter().zip(&transitions).zip(&expired) {
            if result == CompleteResult::Applied {
                r.vanished += 1;
                if t.status() == Status::Dead {
                    r.dead += 1;
                    if let Some(tally) = tally {
                        dead_written.push((tally.labels(claim), t));
                    }
                } else {
                    r.retried += 1;
                }
            }
        }
        if let Some(tally) = tally {
            tally.rescued(dead_written);
        }
    }
    if r.vanished > 0 {
        tracing::warn!(
            vanished = r.vanished,
            retried = r.retried,
            dead = r.dead,
            "expired leases: attempts vanished (worker crashed, killed or stalled)"
        );
    }
    r.past_deadline = store
        .operation_end_past_deadline(EndPastDeadlineParams {
            limit: config.batch,
        })
        .await?;
    if r.past_deadline > 0 {
        tracing::info!(
            ended = r.past_deadline,
            "operations past their deadline ended dead"
        );
    }
    Stats::add(&stats.vanished, r.vanished);
    Stats::add(&stats.deadline_dead, r.past_deadline);
    Ok(r)
}

/// Runs passes until `stop` is cancelled.
pub(crate) async fn run(
    store: Arc<dyn MaintenanceStore>,
    config: RescuerConfig,
    stats: Arc<Stats>,
    tally: Arc<Tally>,
    stop: CancellationToken,
) {
    loop {
        if let Err(e) = rescue_pass(store.as_ref(), &config, &stats, Some(&tally)).await {
            tracing::warn!(error = %e, "rescuer pass failed");
        }
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(config.interval) => {}
        }
    }
}
