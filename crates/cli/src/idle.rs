//! `oprec worker --exit-when-idle`: the worker stops once nothing of its kinds has been
//! pending-and-eligible or running for a while. Judged from the store (counts first, then the
//! pending rows' eligibility), so it sees work enqueued by other processes too.

use std::sync::Arc;
use std::time::Duration;

use oprec::store::ListParams;
use oprec::{Status, Store};

/// How often the store is asked.
const EVERY: Duration = Duration::from_millis(200);

/// Whether any operation of `kinds` is running, or pending and eligible now.
async fn busy(store: &dyn Store, kinds: &[String]) -> oprec::Result<bool> {
    let counts = store.operation_count().await?;
    let mine = |status: Status| {
        counts
            .iter()
            .any(|r| r.status == status && r.count > 0 && kinds.contains(&r.kind))
    };
    if mine(Status::Running) {
        return Ok(true);
    }
    if !mine(Status::Pending) {
        return Ok(false);
    }
    let now = store.now().await?;
    for kind in kinds {
        let mut after = None;
        loop {
            let page = store
                .operation_list(ListParams {
                    status: Some(Status::Pending),
                    kind: Some(kind.clone()),
                    after,
                    limit: 1000,
                    ..Default::default()
                })
                .await?;
            if page.iter().any(|o| o.next_eligible_at <= now) {
                return Ok(true);
            }
            if page.len() < 1000 {
                break;
            }
            after = page.last().map(|o| o.id);
        }
    }
    Ok(false)
}

/// Returns once the store has shown no work for `kinds` for `quiet_for` in a row. A store error
/// counts as work (the worker keeps running; it will report the error itself).
pub(crate) async fn wait_until_idle(
    store: Arc<dyn Store>,
    kinds: Vec<String>,
    quiet_for: Duration,
) {
    let mut quiet_since: Option<tokio::time::Instant> = None;
    loop {
        let is_busy = match busy(store.as_ref(), &kinds).await {
            Ok(b) => b,
            Err(e) => {
                tracing::warn!(error = %e, "idle check failed");
                true
            }
        };
        let now = tokio::time::Instant::now();
        if is_busy {
            quiet_since = None;
        } else if now.duration_since(*quiet_since.get_or_insert(now)) >= quiet_for {
            return;
        }
        tokio::time::sleep(EVERY).await;
    }
}
