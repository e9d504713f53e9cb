//! Retention: how long finished operations stay in the store, decided here and applied by the
//! stores in small batches ([`RetentionStore::operation_retention_delete`]).
//!
//! Only succeeded and cancelled operations are ever removed by age: [`FinishedStatus`] has no
//! other value, so a rule that removes dead, held, reconciling, pending or running operations
//! cannot be written. Dead operations leave only through an operator's action.
//!
//! The default keeps succeeded and cancelled operations for [`Retention::DEFAULT_DAYS`] days:
//! long enough to answer "did it run, and how" for a week of incidents, short enough that the
//! table holds days of history rather than years.

use std::collections::BTreeMap;

use async_trait::async_trait;
use chrono::{DateTime, Duration, Utc};
use serde::Serialize;

use crate::status::named_enum;
use crate::{Result, Status, Store};

named_enum! {
    /// A status retention may remove operations in: the finished ones that need nobody.
    FinishedStatus, "retained status" {
        /// Succeeded.
        Succeeded => "succeeded",
        /// Cancelled.
        Cancelled => "cancelled",
    }
}

impl FinishedStatus {
    /// The operation status it names.
    pub const fn status(self) -> Status {
        match self {
            FinishedStatus::Succeeded => Status::Succeeded,
            FinishedStatus::Cancelled => Status::Cancelled,
        }
    }

    /// The finished status `status` is, if retention may remove it.
    pub fn of(status: Status) -> Option<Self> {
        match status {
            Status::Succeeded => Some(FinishedStatus::Succeeded),
            Status::Cancelled => Some(FinishedStatus::Cancelled),
            _ => None,
        }
    }
}

/// How long one kind's finished operations are kept, per status; `None` keeps them until an
/// operator removes them. Serialized in whole seconds (`{"succeeded_seconds": 604800,
/// "cancelled_seconds": null}`), as the preview's rows and the published settings say ages.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(into = "RetentionSettings")]
pub struct Retention {
    /// How long succeeded operations are kept after they finished.
    pub succeeded: Option<Duration>,
    /// How long cancelled operations are kept after they were cancelled.
    pub cancelled: Option<Duration>,
}

/// Why an age cannot be a retention age.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RetentionAgeError {
    /// Zero or less: every operation would go the moment it finished.
    #[error("must be longer than zero")]
    NotPositive,
    /// Past [`Retention::MAX_DAYS`]: no store can name a time that far back (a cutoff of
    /// millions of days overflows the clock; thousands, PostgreSQL's timestamps).
    #[error(
        "must be at most {} days (100 years); to keep operations until an operator removes them, say off",
        Retention::MAX_DAYS
    )]
    TooLong,
}

/// `age` as a retention age: longer than zero, at most [`Retention::MAX_DAYS`].
pub fn retention_age(age: Duration) -> Result<Duration, RetentionAgeError> {
    if age <= Duration::zero() {
        Err(RetentionAgeError::NotPositive)
    } else if age > Duration::days(Retention::MAX_DAYS) {
        Err(RetentionAgeError::TooLong)
    } else {
        Ok(age)
    }
}

impl Retention {
    /// The default age, in days, of both statuses.
    pub const DEFAULT_DAYS: i64 = 7;

    /// The longest age, in days, a retention may have: 100 years. Longer ones are refused as
    /// input ([`retention_age`]); "keep until an operator removes them" is `None`.
    pub const MAX_DAYS: i64 = 36_500;

    /// Keeps every finished operation (retention off).
    pub const fn off() -> Self {
        Retention {
            succeeded: None,
            cancelled: None,
        }
    }

    /// Both statuses kept for `age`.
    pub fn both(age: Duration) -> Self {
        Retention {
            succeeded: Some(age),
            cancelled: Some(age),
        }
    }

    /// How long operations in `status` are kept.
    pub fn keep_for(&self, status: FinishedStatus) -> Option<Duration> {
        match status {
            FinishedStatus::Succeeded => self.succeeded,
            FinishedStatus::Cancelled => self.cancelled,
        }
    }
}

impl Default for Retention {
    fn default() -> Self {
        Retention::both(Duration::days(Retention::DEFAULT_DAYS))
    }
}

/// The fleet's retention: one [`Retention`] for every kind, and the kinds that declare their own.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct RetentionPolicy {
    /// What kinds without their own retention get.
    pub default: Retention,
    /// Kinds with their own retention.
    pub kinds: BTreeMap<String, Retention>,
}

/// One [`Retention`] in the settings a leader publishes: ages in whole seconds, `null` for kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
struct RetentionSettings {
    succeeded_seconds: Option<i64>,
    cancelled_seconds: Option<i64>,
}

impl From<Retention> for RetentionSettings {
    fn from(r: Retention) -> Self {
        RetentionSettings {
            succeeded_seconds: r.succeeded.map(|d| d.num_seconds()),
            cancelled_seconds: r.cancelled.map(|d| d.num_seconds()),
        }
    }
}

impl RetentionSettings {
    /// The retention, if every age is positive.
    fn retention(self) -> Option<Retention> {
        let age = |s: Option<i64>| match s {
            None => Some(None),
            Some(s) => Some(Some(retention_age(Duration::try_seconds(s)?).ok()?)),
        };
        Some(Retention {
            succeeded: age(self.succeeded_seconds)?,
            cancelled: age(self.cancelled_seconds)?,
        })
    }
}

/// A [`RetentionPolicy`] as a leader publishes it.
#[derive(Debug, Serialize, serde::Deserialize)]
struct PolicySettings {
    default: RetentionSettings,
    kinds: BTreeMap<String, RetentionSettings>,
}

impl RetentionPolicy {
    /// The policy as the maintenance leader publishes it with its leadership
    /// (`{"retention": {"default": {"succeeded_seconds": 604800, "cancelled_seconds": ...},
    /// "kinds": {...}}}`), so that operators preview the fleet's policy, kinds' own ages included.
    pub fn to_settings(&self) -> serde_json::Value {
        let p = PolicySettings {
            default: self.default.into(),
            kinds: self
                .kinds
                .iter()
                .map(|(k, r)| (k.clone(), (*r).into()))
                .collect(),
        };
        serde_json::json!({ "retention": p })
    }

    /// The policy a leader published ([`to_settings`](Self::to_settings)); `None` when the
    /// settings hold none, or one that does not read (an age that is not a [`retention_age`],
    /// another shape).
    pub fn from_settings(settings: &serde_json::Value) -> Option<Self> {
        let p: PolicySettings = serde_json::from_value(settings.get("retention")?.clone()).ok()?;
        Some(RetentionPolicy {
            default: p.default.retention()?,
            kinds: p
                .kinds
                .into_iter()
                .map(|(k, r)| Some((k, r.retention()?)))
                .collect::<Option<_>>()?,
        })
    }
}

/// Which kinds a rule covers: one kind, or every kind but those with their own rules.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum KindScope {
    /// Just this kind.
    Only(String),
    /// Every kind except these.
    AllExcept(Vec<String>),
}

impl KindScope {
    /// Whether `kind` is covered.
    pub fn covers(&self, kind: &str) -> bool {
        match self {
            KindScope::Only(k) => k == kind,
            KindScope::AllExcept(ks) => !ks.iter().any(|k| k == kind),
        }
    }
}

/// One rule of a policy: operations of these kinds, finished in this status longer ago than
/// `keep_for`, are removed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RetentionRule {
    /// The kinds.
    pub kinds: KindScope,
    /// The status.
    pub status: FinishedStatus,
    /// How long they are kept after they finished.
    pub keep_for: Duration,
}

impl RetentionRule {
    /// Operations finished before this time are past their retention at `now`. An age past
    /// [`Retention::MAX_DAYS`] (one a kind declared in code, never read from input, which
    /// [`retention_age`] refuses) counts as that bound, so no cutoff overflows the clock.
    pub fn finished_before(&self, now: DateTime<Utc>) -> DateTime<Utc> {
        now - self.keep_for.min(Duration::days(Retention::MAX_DAYS))
    }

    /// One batch of this rule at `now`, of at most `limit` operations.
    pub fn batch(&self, now: DateTime<Utc>, limit: u32) -> RetentionDeleteParams {
        RetentionDeleteParams {
            kinds: self.kinds.clone(),
            status: self.status,
            finished_before: self.finished_before(now),
            limit,
        }
    }
}

impl RetentionPolicy {
    /// Retention off for every kind.
    pub fn off() -> Self {
        RetentionPolicy {
            default: Retention::off(),
            kinds: BTreeMap::new(),
        }
    }

    /// How long `kind`'s operations in `status` are kept (`None`: until an operator acts).
    pub fn keep_for(&self, kind: &str, status: FinishedStatus) -> Option<Duration> {
        self.kinds
            .get(kind)
            .unwrap_or(&self.default)
            .keep_for(status)
    }

    /// The rules that apply the policy: one per kind with its own retention and status it
    /// removes, then one per status for every other kind. Statuses kept forever have none.
    pub fn rules(&self) -> Vec<RetentionRule> {
        let mut rules = Vec::new();
        for status in FinishedStatus::ALL.iter().copied() {
            for (kind, r) in &self.kinds {
                if let Some(keep_for) = r.keep_for(status) {
                    rules.push(RetentionRule {
                        kinds: KindScope::Only(kind.clone()),
                        status,
                        keep_for,
                    });
                }
            }
            if let Some(keep_for) = self.default.keep_for(status) {
                rules.push(RetentionRule {
                    kinds: KindScope::AllExcept(self.kinds.keys().cloned().collect()),
                    status,
                    keep_for,
                });
            }
        }
        rules
    }
}

/// Remove up to `limit` operations of `kinds` that finished in `status` before
/// `finished_before`, with their attempts and steps, oldest first. An operation that a re-drive
/// names as its origin stays while its re-drive does (the lineage is kept).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RetentionDeleteParams {
    /// The kinds.
    pub kinds: KindScope,
    /// The status; nothing else is ever removed.
    pub status: FinishedStatus,
    /// Only operations that finished before this time.
    pub finished_before: DateTime<Utc>,
    /// The most operations removed by one call: it bounds the statement's locks and I/O.
    pub limit: u32,
}

/// Read what retention holds of one kind in one status.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RetentionFiguresParams {
    /// The kind.
    pub kind: String,
    /// The status.
    pub status: FinishedStatus,
    /// The cutoff: operations finished before it are past their retention.
    pub finished_before: DateTime<Utc>,
}

/// What a kind holds in a finished status, as retention sees it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct RetentionFigures {
    /// Operations finished before the cutoff.
    pub past_retention: u64,
    /// When the longest-finished operation finished.
    pub oldest_finished_at: Option<DateTime<Utc>>,
}

/// How long the per-minute attempt counts (behind `stats`' attempts by dependency and the
/// dashboard's chart) are kept, in days: the chart covers a day at most.
pub const ATTEMPT_MINUTES_KEPT_DAYS: i64 = 2;

/// Remove the per-minute attempt counts of the minutes before `before`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AttemptMinutesRemoveParams {
    /// Minutes that started before this time go.
    pub before: DateTime<Utc>,
}

impl AttemptMinutesRemoveParams {
    /// The minutes past [`ATTEMPT_MINUTES_KEPT_DAYS`] at `now`.
    pub fn past_keeping(now: DateTime<Utc>) -> Self {
        AttemptMinutesRemoveParams {
            before: now - Duration::days(ATTEMPT_MINUTES_KEPT_DAYS),
        }
    }
}

/// Fold the counts of operations not yet ended per creation slot (`backlog_slots`, read by
/// [`AgeBucket::fold_slots`](crate::AgeBucket::fold_slots)): the shards of every slot that
/// started before `before` are summed into one row, and slots that count nothing are removed,
/// so that the counts hold about one row per slot of backlog age however long the store runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BacklogSlotsCompactParams {
    /// Slots that started before this time are folded.
    pub before: DateTime<Utc>,
}

/// How long a creation slot keeps its shards before the upkeep folds them: new operations are
/// counted into the current slot by every enqueuer at once, which is what the shards are for.
pub const BACKLOG_SLOTS_SHARDED_MINUTES: i64 = 60;

impl BacklogSlotsCompactParams {
    /// The slots past [`BACKLOG_SLOTS_SHARDED_MINUTES`] at `now`.
    pub fn settled_at(now: DateTime<Utc>) -> Self {
        BacklogSlotsCompactParams {
            before: now - Duration::minutes(BACKLOG_SLOTS_SHARDED_MINUTES),
        }
    }
}

/// Reclaim the space of removed and rewritten rows in oprec's tables, when nothing else does (a
/// PostgreSQL server whose autovacuum is off, for the server or for these tables).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StoreVacuumParams {}

/// What [`RetentionStore::store_vacuum`] did.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "outcome")]
pub enum VacuumOutcome {
    /// The tables were vacuumed (and analyzed).
    Vacuumed {
        /// The tables, in the order vacuumed.
        tables: Vec<String>,
    },
    /// Nothing was done: something else keeps the tables (autovacuum), or the store needs no
    /// vacuum.
    NotNeeded {
        /// Why, for the log.
        reason: String,
    },
}

/// The retention side of a store: the maintenance leader's batch removal and the operator's
/// preview, and the upkeep of the tables removal leaves behind. Reads and removals walk the
/// partial index of finished operations by finish time.
#[async_trait]
pub trait RetentionStore: Store {
    /// Removes one batch as [`RetentionDeleteParams`] says; returns how many operations went.
    async fn operation_retention_delete(&self, params: RetentionDeleteParams) -> Result<u64>;

    /// What one kind holds in one finished status, against a cutoff.
    async fn operation_retention_figures(
        &self,
        params: RetentionFiguresParams,
    ) -> Result<RetentionFigures>;

    /// Removes the per-minute attempt counts of old minutes; returns how many rows went.
    async fn attempt_minutes_remove(&self, params: AttemptMinutesRemoveParams) -> Result<u64>;

    /// Folds the counts of waiting operations per creation slot as
    /// [`BacklogSlotsCompactParams`] says; returns how many count rows went.
    async fn backlog_slots_compact(&self, params: BacklogSlotsCompactParams) -> Result<u64>;

    /// Vacuums oprec's tables if nothing else does, as [`StoreVacuumParams`] says.
    async fn store_vacuum(&self, params: StoreVacuumParams) -> Result<VacuumOutcome>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_published_policy_reads_back_the_same() {
        let mut p = RetentionPolicy {
            default: Retention::both(Duration::days(3)),
            ..RetentionPolicy::default()
        };
        p.kinds.insert(
            "audit".into(),
            Retention {
                succeeded: Some(Duration::days(90)),
                cancelled: None,
            },
        );
        p.kinds.insert("forever".into(), Retention::off());
        assert_eq!(RetentionPolicy::from_settings(&p.to_settings()), Some(p));
        let off = RetentionPolicy::off();
        assert_eq!(
            RetentionPolicy::from_settings(&off.to_settings()),
            Some(off)
        );
        for bad in [
            serde_json::json!({}),
            serde_json::json!({"retention": 7}),
            serde_json::json!({"retention": {"default": {"succeeded_seconds": -1,
                "cancelled_seconds": null}, "kinds": {}}}),
        ] {
            assert_eq!(RetentionPolicy::from_settings(&bad), None, "{bad}");
        }
    }

    #[test]
    fn only_succeeded_and_cancelled_can_be_removed() {
        for s in Status::ALL {
            let finished = FinishedStatus::of(*s);
            assert_eq!(
                finished.is_some(),
                matches!(s, Status::Succeeded | Status::Cancelled),
                "{s}"
            );
            if let Some(f) = finished {
                assert_eq!(f.status(), *s);
            }
        }
    }

    #[test]
    fn rules_give_each_kind_its_own_age_and_the_rest_the_default() {
        let mut p = RetentionPolicy::default();
        p.kinds.insert(
            "audit".into(),
            Retention {
                succeeded: Some(Duration::days(90)),
                cancelled: None,
            },
        );
        let rules = p.rules();
        assert_eq!(rules.len(), 3);
        assert_eq!(rules[0].kinds, KindScope::Only("audit".into()));
        assert_eq!(rules[0].keep_for, Duration::days(90));
        assert_eq!(rules[1].kinds, KindScope::AllExcept(vec!["audit".into()]));
        assert_eq!(rules[1].keep_for, Duration::days(7));
        // Cancelled audit operations are kept forever: no rule covers them.
        assert!(
            rules
                .iter()
                .filter(|r| r.status == FinishedStatus::Cancelled)
                .all(|r| !r.kinds.covers("audit"))
        );
        assert_eq!(p.keep_for("audit", FinishedStatus::Cancelled), None);
        assert_eq!(
            p.keep_for("mail", FinishedStatus::Cancelled),
            Some(Duration::days(7))
        );
        assert!(RetentionPolicy::off().rules().is_empty());
    }

    #[test]
    fn a_batch_cuts_at_now_less_the_age() {
        let now = DateTime::<Utc>::from_timestamp(1_000_000, 0).unwrap();
        let rule = RetentionRule {
            kinds: KindScope::Only("k".into()),
            status: FinishedStatus::Succeeded,
            keep_for: Duration::minutes(5),
        };
        let b = rule.batch(now, 500);
        assert_eq!(b.finished_before, now - Duration::minutes(5));
        assert_eq!(b.limit, 500);
        let forever = RetentionRule {
            keep_for: Duration::days(100_000_000),
            ..rule
        };
        assert_eq!(
            forever.finished_before(now),
            now - Duration::days(Retention::MAX_DAYS)
        );
    }

    #[test]
    fn retention_ages_are_positive_and_at_most_a_hundred_years() {
        assert_eq!(
            retention_age(Duration::zero()),
            Err(RetentionAgeError::NotPositive)
        );
        assert_eq!(
            retention_age(Duration::days(Retention::MAX_DAYS)),
            Ok(Duration::days(Retention::MAX_DAYS))
        );
        assert_eq!(
            retention_age(Duration::days(Retention::MAX_DAYS + 1)),
            Err(RetentionAgeError::TooLong)
        );
        let huge = serde_json::json!({"retention": {"default": {"succeeded_seconds": i64::MAX,
            "cancelled_seconds": null}, "kinds": {}}});
        assert_eq!(RetentionPolicy::from_settings(&huge), None);
    }
}
