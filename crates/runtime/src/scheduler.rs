//! The scheduler: re-selects eligible operations from the store and publishes their wake-ups, so
//! a purged, lost or late broker backlog is rebuilt and retries wake when their rung comes due.
//! Selecting marks the rows woken in the same statement, so several schedulers never publish the
//! same operation twice in one interval (and PostgreSQL lets one leader at a time select).

use std::sync::Arc;
use std::time::Duration;

use oprec_core::maintenance::{WakeDueParams, WakeResetParams};
use oprec_core::{MaintenanceStore, Transport};
use rand::Rng;
use tokio_util::sync::CancellationToken;

use crate::Stats;

/// What the scheduler needs to know.
#[derive(Clone, Debug)]
pub struct SchedulerConfig {
    /// How often to look for due operations.
    pub interval: Duration,
    /// How long a published wake-up is trusted before the operation is woken again.
    pub rewake_after: chrono::Duration,
    /// The most wake-ups per pass.
    pub batch: u32,
    /// Wake-ups per publish call; a pass with many chunks spreads them over the interval with
    /// jitter, so a mass of operations that became eligible together does not arrive at once.
    pub chunk: usize,
}

impl Default for SchedulerConfig {
    fn default() -> Self {
        SchedulerConfig {
            interval: Duration::from_secs(1),
            rewake_after: chrono::Duration::seconds(30),
            batch: 10_000,
            chunk: 1000,
        }
    }
}

/// What one pass did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SchedulePass {
    /// Wake-ups published.
    pub published: u64,
    /// The transport refused a publish: the rest of the pass was given back to the store
    /// (unmarked), and the next pass waits longer.
    pub publish_failed: bool,
}

/// One pass: picks the due operations and publishes their wake-ups. When a publish fails, the
/// operations of that chunk and of the chunks after it are unmarked (their rows said "woken" for
/// a wake-up the broker never took), so the next pass tries them again instead of trusting it for
/// the re-wake interval.
pub async fn schedule_once(
    store: &dyn MaintenanceStore,
    transport: &dyn Transport,
    config: &SchedulerConfig,
    stats: &Stats,
) -> oprec_core::Result<SchedulePass> {
    let ids = store
        .operation_wake_due(WakeDueParams {
            rewake_after: config.rewake_after,
            limit: config.batch,
        })
        .await?;
    let chunks: Vec<_> = ids.chunks(config.chunk.max(1)).collect();
    let pause = config.interval / (chunks.len().max(1) as u32);
    let mut pass = SchedulePass::default();
    for (i, chunk) in chunks.iter().enumerate() {
        if i > 0 {
            let jitter = rand::rng().random_range(0.5..1.5);
            tokio::time::sleep(pause.mul_f64(jitter)).await;
        }
        if let Err(e) = transport.publish(chunk).await {
            Stats::add(&stats.publish_errors, 1);
            let left = ids[i * config.chunk.max(1)..].to_vec();
            let unmarked = store
                .operation_wake_reset(WakeResetParams {
                    kinds: Vec::new(),
                    ids: left.clone(),
                })
                .await;
            tracing::warn!(error = %e, count = left.len(), transport = transport.name(),
                unmarked = ?unmarked, "publishing wake-ups failed; a later pass tries them again");
            pass.publish_failed = true;
            break;
        }
        pass.published += chunk.len() as u64;
    }
    Stats::add(&stats.published, pass.published);
    Ok(pass)
}

/// Runs passes until `stop` is cancelled. While the transport refuses publishes, passes come
/// further apart (doubling up to [`MAX_FAILING_INTERVAL`]), so an outage does not turn every
/// interval into a pick-and-unmark of the whole backlog; the first pass after it publishes.
pub(crate) async fn run(
    store: Arc<dyn MaintenanceStore>,
    transport: Arc<dyn Transport>,
    config: SchedulerConfig,
    stats: Arc<Stats>,
    stop: CancellationToken,
) {
    let mut failing = 0u32;
    loop {
        match schedule_once(store.as_ref(), transport.as_ref(), &config, &stats).await {
            Ok(pass) if pass.publish_failed => failing = (failing + 1).min(8),
            Ok(_) => failing = 0,
            Err(e) => tracing::warn!(error = %e, "scheduler pass failed"),
        }
        let wait =
            (config.interval * (1 << failing)).min(MAX_FAILING_INTERVAL.max(config.interval));
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(wait) => {}
        }
    }
}

/// The longest wait between passes while publishing fails.
pub const MAX_FAILING_INTERVAL: Duration = Duration::from_secs(5);
