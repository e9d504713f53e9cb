//! The scheduler: re-selects eligible operations from the store and publishes their wake-ups, so
//! a purged, lost or late broker backlog is rebuilt and retries wake when their rung comes due.
//! Each wake-up goes to its kind's stream or queue, so only the workers of that kind receive it.
//! Selecting marks the rows woken in the same statement, so several schedulers never publish the
//! same operation twice in one interval (and PostgreSQL lets one leader at a time select).

use std::sync::Arc;
use std::time::Duration;

use oprec_core::maintenance::WakeDueParams;
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

/// One pass: returns how many wake-ups were published.
pub async fn schedule_once(
    store: &dyn MaintenanceStore,
    transport: &dyn Transport,
    config: &SchedulerConfig,
    stats: &Stats,
) -> oprec_core::Result<u64> {
    let due = store
        .operation_wake_due(WakeDueParams {
            rewake_after: config.rewake_after,
            limit: config.batch,
        })
        .await?;
    let chunks: Vec<_> = due.chunks(config.chunk.max(1)).collect();
    let pause = config.interval / (chunks.len().max(1) as u32);
    let mut published = 0;
    for (i, chunk) in chunks.iter().enumerate() {
        if i > 0 {
            let jitter = rand::rng().random_range(0.5..1.5);
            tokio::time::sleep(pause.mul_f64(jitter)).await;
        }
        match transport.publish(chunk).await {
            Ok(()) => published += chunk.len() as u64,
            Err(e) => {
                Stats::add(&stats.publish_errors, 1);
                tracing::warn!(error = %e, count = chunk.len(), transport = transport.name(),
                    "publishing wake-ups failed; they will be re-woken after the re-wake interval");
            }
        }
    }
    Stats::add(&stats.published, published);
    Ok(published)
}

/// Runs passes until `stop` is cancelled.
pub(crate) async fn run(
    store: Arc<dyn MaintenanceStore>,
    transport: Arc<dyn Transport>,
    config: SchedulerConfig,
    stats: Arc<Stats>,
    stop: CancellationToken,
) {
    loop {
        if let Err(e) = schedule_once(store.as_ref(), transport.as_ref(), &config, &stats).await {
            tracing::warn!(error = %e, "scheduler pass failed");
        }
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(config.interval) => {}
        }
    }
}
