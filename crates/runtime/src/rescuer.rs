//! The rescuer: expired leases become vanished attempts (and, K in a row, a crash loop ends dead);
//! waiting operations past their deadline end dead.

use std::sync::Arc;
use std::time::Duration;

use oprec_core::Store;
use oprec_core::store::RescueParams;
use tokio_util::sync::CancellationToken;

use crate::Stats;

/// What the rescuer needs to know.
#[derive(Clone, Debug)]
pub struct RescuerConfig {
    /// How often to look.
    pub interval: Duration,
    /// Vanished attempts in a row before an operation is dead (crash_loop).
    pub vanish_limit: u32,
    /// How long a rescued operation waits before it may run again.
    pub retry_delay: chrono::Duration,
    /// The most operations handled per pass.
    pub batch: u32,
}

impl Default for RescuerConfig {
    fn default() -> Self {
        RescuerConfig {
            interval: Duration::from_secs(5),
            vanish_limit: 3,
            retry_delay: chrono::Duration::zero(),
            batch: 1000,
        }
    }
}

/// One pass: rescues and ends what is due; returns (vanished, ended past deadline).
pub async fn rescue_once(
    store: &dyn Store,
    config: &RescuerConfig,
    stats: &Stats,
) -> oprec_core::Result<(u64, u64)> {
    let r = store
        .operation_rescue_expired(RescueParams {
            vanish_limit: config.vanish_limit,
            retry_delay: config.retry_delay,
            limit: config.batch,
        })
        .await?;
    if r.vanished > 0 {
        tracing::warn!(
            vanished = r.vanished,
            retried = r.retried,
            dead = r.dead,
            "expired leases: attempts vanished (worker crashed, killed or stalled)"
        );
    }
    let ended = store.operation_end_past_deadline(config.batch).await?;
    if ended > 0 {
        tracing::info!(ended, "operations past their deadline ended dead");
    }
    Stats::add(&stats.vanished, r.vanished);
    Stats::add(&stats.deadline_dead, ended);
    Ok((r.vanished, ended))
}

/// Runs passes until `stop` is cancelled.
pub(crate) async fn run(
    store: Arc<dyn Store>,
    config: RescuerConfig,
    stats: Arc<Stats>,
    stop: CancellationToken,
) {
    loop {
        if let Err(e) = rescue_once(store.as_ref(), &config, &stats).await {
            tracing::warn!(error = %e, "rescuer pass failed");
        }
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(config.interval) => {}
        }
    }
}
