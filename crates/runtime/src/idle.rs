//! Idle detection for [`Worker::run_until_idle`](crate::Worker::run_until_idle): the worker is
//! idle once no operation of its kinds has been running, or pending, eligible and held back by
//! no control, for a while. Judged from the store
//! ([`WorkerStore::operation_work_exists`](oprec_core::WorkerStore::operation_work_exists)), so
//! it sees work other processes enqueue too; a paused operation is no work this worker could do.

use std::sync::Arc;
use std::time::Duration;

use oprec_core::WorkerStore;
use oprec_core::store::WorkExistsParams;

/// How often the store is asked.
const EVERY: Duration = Duration::from_millis(200);

/// Returns once the store has shown no work for `kinds` for `quiet_for` in a row. A store error
/// counts as work (the worker keeps running; it reports the error itself).
pub(crate) async fn wait_until_idle(
    store: Arc<dyn WorkerStore>,
    kinds: Vec<String>,
    quiet_for: Duration,
) {
    let mut quiet_since: Option<tokio::time::Instant> = None;
    loop {
        let busy = match store
            .operation_work_exists(WorkExistsParams {
                kinds: kinds.clone(),
            })
            .await
        {
            Ok(b) => b,
            Err(e) => {
                tracing::warn!(error = %e, "idle check failed");
                true
            }
        };
        let now = tokio::time::Instant::now();
        if busy {
            quiet_since = None;
        } else if now.duration_since(*quiet_since.get_or_insert(now)) >= quiet_for {
            return;
        }
        tokio::time::sleep(EVERY).await;
    }
}
