//! A worker's row in the `workers` table: written when it starts, refreshed on a heartbeat, and
//! removed when it stops cleanly, so operators can see who runs which kinds and the stats can
//! show pending work of a kind no live worker handles. A failed beat is logged and retried on the
//! next one: presence is for people, never a reason to stop working.

use std::sync::Arc;
use std::time::Duration;

use oprec_core::store::WorkerRemoveParams;
use oprec_core::{WorkerBeatParams, WorkerStore};
use tokio_util::sync::CancellationToken;

/// How often a worker refreshes its row; well inside [`oprec_core::WORKER_LIVE_SECS`].
pub(crate) const BEAT_EVERY: Duration = Duration::from_secs(15);

/// The name of this host, for the row (empty when it cannot be read).
pub(crate) fn host_name() -> String {
    std::env::var("HOSTNAME")
        .ok()
        .filter(|h| !h.is_empty())
        .or_else(|| std::fs::read_to_string("/proc/sys/kernel/hostname").ok())
        .or_else(|| std::fs::read_to_string("/etc/hostname").ok())
        .map(|h| h.trim().to_owned())
        .unwrap_or_default()
}

/// Beats at once and every [`BEAT_EVERY`] until `stop`, then removes the row.
pub(crate) async fn run(
    store: Arc<dyn WorkerStore>,
    params: WorkerBeatParams,
    stop: CancellationToken,
) {
    let id = params.id.clone();
    loop {
        if let Err(e) = store.worker_beat(params.clone()).await {
            tracing::warn!(error = %e, worker = %id, "recording this worker in `workers` failed");
        }
        tokio::select! {
            _ = stop.cancelled() => break,
            _ = tokio::time::sleep(BEAT_EVERY) => {}
        }
    }
    if let Err(e) = store
        .worker_remove(WorkerRemoveParams { id: id.clone() })
        .await
    {
        tracing::warn!(error = %e, worker = %id, "removing this worker from `workers` failed");
    }
}
