//! The recurring kinds as operators see them (`oprec schedules`, the dashboard's schedules
//! page): each schedule with its next tick, its last tick and operation, that operation's status,
//! and whether the schedule is being ticked at all.

use chrono::{DateTime, Duration, Utc};
use oprec_core::operator::WorkerListParams;
use oprec_core::schedule::ScheduleRecord;
use oprec_core::{FullStore, WORKER_LIVE_SECS};
use serde::Serialize;

use crate::Result;

/// How far past its next tick a schedule may be before it is shown as behind: the leader looks
/// every second, so more than this means no leader of a release that ticks is running.
pub const BEHIND_AFTER: Duration = Duration::seconds(10);

/// Whether a schedule is being served.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ScheduleState {
    /// Its next tick is ahead (or just due), and a live worker runs the kind.
    OnTime,
    /// Its next tick is more than [`BEHIND_AFTER`] past: no maintenance leader ticks it.
    Behind,
    /// No live worker runs the kind: its operations are enqueued but nobody claims them.
    NoWorker,
}

impl ScheduleState {
    /// The state in a few words.
    pub fn as_str(&self) -> &'static str {
        match self {
            ScheduleState::OnTime => "on time",
            ScheduleState::Behind => "behind: no maintenance leader ticks it",
            ScheduleState::NoWorker => "no live worker runs the kind",
        }
    }
}

/// One schedule as listed.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ScheduleView {
    /// The row, with its last operation's status.
    #[serde(flatten)]
    pub record: ScheduleRecord,
    /// Whether it is served.
    pub state: ScheduleState,
}

/// Every schedule, with its state at the store's now; returns the now too.
pub async fn list<S: FullStore + ?Sized>(store: &S) -> Result<(DateTime<Utc>, Vec<ScheduleView>)> {
    let now = store.now().await?;
    let records = store.schedule_list().await?;
    let workers = if records.is_empty() {
        Vec::new()
    } else {
        store
            .worker_list(WorkerListParams {
                seen_within: Duration::seconds(WORKER_LIVE_SECS),
            })
            .await?
    };
    let views = records
        .into_iter()
        .map(|record| {
            let runs = workers.iter().any(|w| w.kinds.contains(&record.kind));
            let state = if !runs {
                ScheduleState::NoWorker
            } else if record.next_tick.is_some_and(|t| t + BEHIND_AFTER < now) {
                ScheduleState::Behind
            } else {
                ScheduleState::OnTime
            };
            ScheduleView { record, state }
        })
        .collect();
    Ok((now, views))
}
