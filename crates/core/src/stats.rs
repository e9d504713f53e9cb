//! The at-a-glance figures ([`StatsReport`]) and their typed keys.

use std::collections::BTreeMap;

use chrono::{DateTime, Duration, Utc};
use serde::{Serialize, Serializer};

use crate::status::named_enum;
use crate::{ControlAction, ControlScope, FailureClass, OperationId, Status, UnhandledKind};

named_enum! {
    /// How long ago a waiting operation was created: the backlog's age buckets.
    AgeBucket, "age bucket" {
        /// Created within the last hour.
        UnderAnHour => "<1h",
        /// Between an hour and a day ago.
        UnderADay => "1h-1d",
        /// Between a day and a week ago.
        UnderAWeek => "1d-7d",
        /// More than a week ago.
        OverAWeek => ">7d",
    }
}

impl AgeBucket {
    /// The bucket's upper bound on age (`None` for the last, unbounded one).
    pub fn upper_bound(self) -> Option<Duration> {
        match self {
            AgeBucket::UnderAnHour => Some(Duration::hours(1)),
            AgeBucket::UnderADay => Some(Duration::days(1)),
            AgeBucket::UnderAWeek => Some(Duration::days(7)),
            AgeBucket::OverAWeek => None,
        }
    }

    /// The bucket of an operation created at `created_at`, seen at `now`.
    pub fn of(created_at: DateTime<Utc>, now: DateTime<Utc>) -> Self {
        let age = now - created_at;
        AgeBucket::ALL
            .iter()
            .copied()
            .find(|b| b.upper_bound().is_none_or(|max| age <= max))
            .unwrap_or(AgeBucket::OverAWeek)
    }

    /// Operations not yet ended, by bucket, from the stores' counts per creation slot (the start
    /// of the [`BACKLOG_SLOT_MINUTES`] in which each was created; a slot may come in several
    /// parts, as sharded counts do). Each slot goes to the bucket of its start, so an age is
    /// never shown younger than it is, and at most [`BACKLOG_SLOT_MINUTES`] older. Slots whose
    /// parts sum to nothing are left out (a count that sums below zero, which only a count table
    /// edited by hand can hold, counts as nothing).
    pub fn fold_slots(
        slots: impl IntoIterator<Item = (DateTime<Utc>, i64)>,
        now: DateTime<Utc>,
    ) -> BTreeMap<AgeBucket, u64> {
        let mut per_slot: BTreeMap<DateTime<Utc>, i64> = BTreeMap::new();
        for (slot, n) in slots {
            *per_slot.entry(slot).or_default() += n;
        }
        let mut buckets = BTreeMap::new();
        for (slot, n) in per_slot {
            if let Ok(n @ 1..) = u64::try_from(n) {
                *buckets.entry(AgeBucket::of(slot, now)).or_default() += n;
            }
        }
        buckets
    }
}

/// The creation slot an operation created at `at` is counted in: the start of its
/// [`BACKLOG_SLOT_MINUTES`] (what the stores' triggers compute from `created_at`).
pub fn backlog_slot(at: DateTime<Utc>) -> DateTime<Utc> {
    let width = BACKLOG_SLOT_MINUTES * 60;
    let secs = at.timestamp().div_euclid(width) * width;
    DateTime::from_timestamp(secs, 0).unwrap_or(at)
}

/// The width, in minutes, of the creation-time slots in which the stores keep their counts of
/// operations not yet ended (`backlog_slots`), read by [`AgeBucket::fold_slots`]: the backlog's
/// ages are exact to this much, and the counts hold about one row per slot of backlog age.
pub const BACKLOG_SLOT_MINUTES: i64 = 5;

/// The name a missing failure class is shown under.
pub const NO_CLASS: &str = "none";

fn class_keys<S: Serializer>(
    map: &BTreeMap<Option<FailureClass>, u64>,
    s: S,
) -> Result<S::Ok, S::Error> {
    s.collect_map(
        map.iter()
            .map(|(k, v)| (k.map_or(NO_CLASS, |c| c.as_str()), v)),
    )
}

/// The figures that answer "what is failing, why, and is it safe" at a glance: the retry
/// observations an operator needs (pending by failure class, attempts per completed effect, the
/// oldest eligible operation, deaths per kind and their rate, unknown outcomes, attempts by
/// dependency, backlog age by creation time).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct StatsReport {
    /// When the figures were taken.
    pub at: Option<DateTime<Utc>>,
    /// Operations by status. A dead operation re-driven as new (its copy carries the work on)
    /// is not counted under dead but in [`StatsReport::dead_redriven_by_kind`], so `dead` is the
    /// dead awaiting action.
    pub by_status: BTreeMap<Status, u64>,
    /// Pending operations by last failure class (`None`, shown as `none`, when they have not
    /// failed).
    #[serde(serialize_with = "class_keys")]
    pub pending_by_class: BTreeMap<Option<FailureClass>, u64>,
    /// Attempts recorded per succeeded operation (1.0 is perfect).
    pub attempts_per_success: Option<f64>,
    /// The pending operation that has waited longest past its eligible time, and since when,
    /// among those no control holds back: the work workers should be taking (held-back work is
    /// in [`StatsReport::held_back`]).
    pub oldest_eligible: Option<OldestEligible>,
    /// Each pause or postponement in force, with the eligible work it holds back: what explains
    /// a backlog that nobody claims.
    pub held_back: Vec<HeldBack>,
    /// Dead operations awaiting action per kind (not re-driven as new).
    pub dead_by_kind: BTreeMap<String, u64>,
    /// Dead operations re-driven as new per kind: no longer awaiting action, kept with their
    /// history and a link to their copy.
    pub dead_redriven_by_kind: BTreeMap<String, u64>,
    /// Operations promoted to dead in the last hour, per kind.
    pub dead_last_hour_by_kind: BTreeMap<String, u64>,
    /// Operations promoted to dead in the last day, per kind.
    pub dead_last_day_by_kind: BTreeMap<String, u64>,
    /// Operations promoted to dead in the last day, per code version of their last attempt.
    pub dead_last_day_by_code_version: BTreeMap<String, u64>,
    /// Unknown outcomes awaiting reconciliation.
    pub reconciling: u64,
    /// Attempts that ended in the last hour, per dependency (`none` for kinds without one).
    pub attempts_last_hour_by_dependency: BTreeMap<String, u64>,
    /// Age of the oldest non-terminal operation, by its original creation time.
    pub backlog_age_seconds: Option<i64>,
    /// Non-terminal operations by age bucket of their creation time.
    pub backlog_by_age: BTreeMap<AgeBucket, u64>,
    /// Pending operations, per kind, that no live worker handles (see [`OperatorStore::worker_list`](crate::OperatorStore::worker_list)).
    pub unhandled: Vec<UnhandledKind>,
}

/// The most eligible operations counted per control: a hold over more is reported as "at least"
/// this many, so that the figures stay a bounded walk of the pending index however large the
/// hold.
pub const HELD_BACK_COUNT_MAX: u64 = 10_000;

/// A control in force and the eligible pending work it holds back.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct HeldBack {
    /// What the control applies to.
    pub scope: ControlScope,
    /// The kind, class or dependency name.
    pub value: String,
    /// Pause or postpone.
    pub action: ControlAction,
    /// When it lapses by itself (a postponement's end), if ever.
    pub until: Option<DateTime<Utc>>,
    /// Pending operations eligible now that it holds back, counted up to
    /// [`HELD_BACK_COUNT_MAX`].
    pub eligible: u64,
    /// The count stopped at [`HELD_BACK_COUNT_MAX`]: there are at least that many.
    pub at_least: bool,
    /// The held-back operation eligible longest.
    pub oldest: Option<OldestEligible>,
}

/// The pending operation most overdue.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct OldestEligible {
    /// The operation.
    pub id: OperationId,
    /// Its kind.
    pub kind: String,
    /// When it became eligible.
    pub next_eligible_at: DateTime<Utc>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> DateTime<Utc> {
        s.parse().expect("a time")
    }

    #[test]
    fn slots_fold_into_the_bucket_of_their_start_summed_over_parts() {
        let now = at("2026-12-03T10:32:10Z");
        let folded = AgeBucket::fold_slots(
            [
                // Two shards of the current slot, and the slot that started 57 minutes ago.
                (at("2026-12-03T10:30:00Z"), 3),
                (at("2026-12-03T10:30:00Z"), 2),
                (at("2026-12-03T09:35:00Z"), 1),
                // Started 62 minutes ago: older than an hour, though operations created in its
                // last two minutes are younger.
                (at("2026-12-03T09:30:00Z"), 4),
                (at("2026-11-30T10:00:00Z"), 7),
                (at("2026-11-01T00:00:00Z"), 1),
                // Shards that net to nothing, and a negative one: left out.
                (at("2026-12-03T08:00:00Z"), 2),
                (at("2026-12-03T08:00:00Z"), -2),
                (at("2026-12-01T08:00:00Z"), -1),
            ],
            now,
        );
        assert_eq!(
            folded,
            BTreeMap::from([
                (AgeBucket::UnderAnHour, 6),
                (AgeBucket::UnderADay, 4),
                (AgeBucket::UnderAWeek, 7),
                (AgeBucket::OverAWeek, 1),
            ])
        );
    }

    #[test]
    fn a_slot_starts_on_the_five_minutes() {
        assert_eq!(
            backlog_slot(at("2026-12-03T10:34:59.999999Z")),
            at("2026-12-03T10:30:00Z")
        );
        assert_eq!(
            backlog_slot(at("2026-12-03T10:35:00Z")),
            at("2026-12-03T10:35:00Z")
        );
        assert_eq!(
            backlog_slot(at("1969-12-31T23:59:59Z")),
            at("1969-12-31T23:55:00Z")
        );
    }

    #[test]
    fn no_slot_no_bucket() {
        assert!(AgeBucket::fold_slots([], at("2026-12-03T10:00:00Z")).is_empty());
    }
}
