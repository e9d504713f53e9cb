//! Moves the virtual clock from event to event while a real worker, scheduler and rescuer run on
//! short real intervals. The driver waits until the system is quiet (no watched operation is due
//! at the virtual now, and none is running except hung ones whose lease is still live), then jumps
//! to the next event: the earliest `next_eligible_at` of a pending operation, or one second past
//! the lease of a hung one. It stops when every watched operation rests.

use std::collections::HashSet;
use std::time::Duration as StdDuration;

use chrono::{DateTime, Duration, Utc};
use oprec::store::OperationGetParams;
use oprec::{Clock, FullStore, ManualClock, OperationId, Status};

/// How often the store is looked at.
const POLL: StdDuration = StdDuration::from_millis(5);

/// What the watched operations say about "now".
#[derive(Debug, Default, PartialEq)]
enum Moment {
    /// Every operation rests (succeeded, dead, cancelled, reconciling or held).
    #[default]
    AtRest,
    /// Something is due or in flight: wait.
    Busy,
    /// Nothing happens until this time.
    NextEvent(DateTime<Utc>),
}

/// Looks at the operations once.
async fn moment(
    store: &dyn FullStore,
    ids: &[OperationId],
    hung: &HashSet<OperationId>,
    now: DateTime<Utc>,
) -> anyhow::Result<Moment> {
    let mut next: Option<DateTime<Utc>> = None;
    for id in ids {
        let op = store
            .operation_get(OperationGetParams { id: *id })
            .await?
            .ok_or_else(|| anyhow::anyhow!("operation {id} vanished from the store"))?
            .operation;
        let event = match op.status {
            Status::Pending if op.next_eligible_at <= now => return Ok(Moment::Busy),
            Status::Pending => op.next_eligible_at,
            Status::Running if hung.contains(id) => match op.lease_until {
                // Expired: the rescuer's turn.
                Some(lease) if lease >= now => lease + Duration::seconds(1),
                _ => return Ok(Moment::Busy),
            },
            Status::Running => return Ok(Moment::Busy),
            _ => continue,
        };
        next = Some(next.map_or(event, |n| n.min(event)));
    }
    Ok(next.map_or(Moment::AtRest, Moment::NextEvent))
}

/// Drives `clock` until every operation of `ids` rests, or fails after `limit` of real time.
pub(crate) async fn run_until_rest(
    store: &dyn FullStore,
    clock: &ManualClock,
    ids: &[OperationId],
    hung: &HashSet<OperationId>,
    limit: StdDuration,
) -> anyhow::Result<()> {
    let give_up = tokio::time::Instant::now() + limit;
    loop {
        match moment(store, ids, hung, clock.now()).await? {
            Moment::AtRest => return Ok(()),
            Moment::NextEvent(at) => clock.set(at),
            Moment::Busy => {}
        }
        if tokio::time::Instant::now() > give_up {
            anyhow::bail!(
                "the demo did not settle within {limit:?} of real time (virtual time {})",
                clock.now()
            );
        }
        tokio::time::sleep(POLL).await;
    }
}
