//! `oprec worker --exit-when-idle`: the worker stops once nothing of its kinds has been
//! pending-and-eligible or running for a while. Judged from the store (counts first, then the
//! pending rows' eligibility), so it sees work enqueued by other processes too. An operation that
//! a pause or postponement holds back is not work this worker could do, so it does not count.

use std::sync::Arc;
use std::time::Duration;

use oprec::operator::{Control, ControlScope};
use oprec::store::ListParams;
use oprec::{Operation, OperatorStore, Status};

/// How often the store is asked.
const EVERY: Duration = Duration::from_millis(200);

/// Whether a control in force holds `op` back.
fn held_back(op: &Operation, controls: &[Control]) -> bool {
    controls.iter().any(|c| match c.scope {
        ControlScope::Kind => c.value == op.kind,
        ControlScope::FailureClass => op.last_failure_class.is_some_and(|f| f.as_str() == c.value),
        ControlScope::Dependency => op.dependency.as_deref() == Some(c.value.as_str()),
    })
}

/// Whether any operation of `kinds` is running, or pending, eligible now and not paused.
async fn busy(store: &dyn OperatorStore, kinds: &[String]) -> oprec::Result<bool> {
    // One row per status and kind, found on the (status, kind, id) index: cheap however many
    // finished operations the table holds (a count by status would read them all, five times a
    // second, and slow the very worker it watches).
    let mine = async |status: Status| {
        for kind in kinds {
            let one = ListParams {
                status: Some(status),
                kind: Some(kind.clone()),
                limit: 1,
                ..Default::default()
            };
            if !store.operation_list(one).await?.is_empty() {
                return Ok::<_, oprec::Error>(true);
            }
        }
        Ok(false)
    };
    if mine(Status::Running).await? {
        return Ok(true);
    }
    if !mine(Status::Pending).await? {
        return Ok(false);
    }
    let now = store.now().await?;
    let controls = store.control_list().await?;
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
            if page
                .iter()
                .any(|o| o.next_eligible_at <= now && !held_back(o, &controls))
            {
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
    store: Arc<dyn OperatorStore>,
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
