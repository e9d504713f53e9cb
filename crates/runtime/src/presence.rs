//! A worker's row in the `workers` table: written when it starts, refreshed on a heartbeat, and
//! removed when it stops cleanly, so operators can see who runs which kinds and the stats can
//! show pending work of a kind no live worker handles. A failed beat is logged and retried on the
//! next one: presence is for people, never a reason to stop working.
//!
//! When it starts, the worker also publishes the enqueue-time policies of its kinds
//! (`operation_kinds`), which PostgreSQL's `oprec_enqueue` reads to enqueue from SQL; a failed
//! publication is logged and tried again with each beat until it succeeds. Only at start: a
//! kind's row then says what the fleet's newest worker of that kind runs, rather than flipping
//! between the releases of a rolling deploy on every beat. Its kinds' schedules are declared
//! (`operation_schedules`) the same way, once.

use std::sync::Arc;
use std::time::Duration;

use oprec_core::schedule::ScheduleDeclareParams;
use oprec_core::store::WorkerRemoveParams;
use oprec_core::{FullStore, KindPublishParams, WorkerBeatParams};
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

/// Publishes `kinds` and declares `schedules`, beats at once and every [`BEAT_EVERY`] until
/// `stop`, then removes the row.
pub(crate) async fn run(
    store: Arc<dyn FullStore>,
    params: WorkerBeatParams,
    kinds: KindPublishParams,
    schedules: ScheduleDeclareParams,
    stop: CancellationToken,
) {
    let id = params.id.clone();
    let mut unpublished = Some(kinds);
    let mut undeclared = Some(schedules);
    loop {
        if let Some(schedules) = undeclared.take()
            && let Err(e) = store.schedule_declare(schedules.clone()).await
        {
            tracing::warn!(error = %e, worker = %id,
                "declaring this worker's schedules to `operation_schedules` failed; trying again with the next beat");
            undeclared = Some(schedules);
        }
        if let Some(kinds) = unpublished.take()
            && let Err(e) = store.kind_publish(kinds.clone()).await
        {
            tracing::warn!(error = %e, worker = %id,
                "publishing this worker's kinds to `operation_kinds` failed; trying again with the next beat");
            unpublished = Some(kinds);
        }
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
