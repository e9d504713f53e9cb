//! Limits that hold across the fleet: at most N operations of a kind (or of a dependency) running
//! at once, and at most R attempts per second started against a kind or dependency, over every
//! worker. Stores enforce them at claim: a claim that may reach a limited kind or dependency
//! locks the limit rows, counts what runs, asks [`ClaimAllowance`] how many it may take of each,
//! and records its starts in the limit's [`RateWindow`] before it commits. Work beyond a limit is
//! not claimed: it stays pending with its attempt unspent, and is claimed once there is room.
//!
//! The rate is a sliding window, not a token bucket: a bucket that refills R per second and
//! holds a burst lets up to burst + R starts into one second after a quiet spell, while the
//! window guarantees at most R starts in any second (README, "Limits across the fleet").

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::status::named_enum;
use crate::{Error, Result, Store};

/// The width of one slot of a [`RateWindow`], in milliseconds.
pub const RATE_SLOT_MS: i64 = 50;

/// The span a rate is counted over.
const SECOND_MS: i64 = 1000;

named_enum! {
    /// What a limit applies to.
    LimitScope, "limit scope" {
        /// Operations of one kind.
        Kind => "kind",
        /// Operations that call one dependency (their `dependency` column).
        Dependency => "dependency",
    }
}

/// The starts of the last second against one limit, in [`RATE_SLOT_MS`] slots: each entry is a
/// slot's start (milliseconds since the epoch) and how many claims started in it. Stored as JSON
/// in `operation_limits.recent_starts`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RateWindow {
    /// `(slot start in ms, starts)`, oldest first.
    pub slots: Vec<(i64, u32)>,
}

impl RateWindow {
    /// Reads the stored JSON; an empty or unreadable value is an empty window (it only ever
    /// holds the last second, so losing it costs at most one second of accuracy).
    pub fn from_json(text: Option<&str>) -> RateWindow {
        text.and_then(|t| serde_json::from_str(t).ok())
            .unwrap_or_default()
    }

    /// The JSON stored.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("a window is plain numbers")
    }

    /// The latest instant a start was recorded at (the end of its slot), if any.
    pub fn last_slot_start(&self) -> Option<DateTime<Utc>> {
        self.slots
            .last()
            .and_then(|(ms, _)| DateTime::from_timestamp_millis(*ms))
    }

    /// Starts recorded in every slot that overlaps the second up to `now`: a bound on the
    /// starts of any one-second span that ends at or after `now`.
    pub fn starts_within_second(&self, now: DateTime<Utc>) -> u32 {
        let from = now.timestamp_millis() - SECOND_MS;
        self.slots
            .iter()
            .filter(|(start, _)| start + RATE_SLOT_MS > from)
            .map(|(_, n)| n)
            .sum()
    }

    /// Records `n` starts at `now` and forgets the slots no later second can overlap.
    pub fn record(&mut self, now: DateTime<Utc>, n: u32) {
        let ms = now.timestamp_millis();
        self.slots
            .retain(|(start, _)| start + RATE_SLOT_MS > ms - SECOND_MS);
        if n == 0 {
            return;
        }
        let slot = ms.div_euclid(RATE_SLOT_MS) * RATE_SLOT_MS;
        match self.slots.last_mut() {
            Some((start, count)) if *start == slot => *count += n,
            _ => self.slots.push((slot, n)),
        }
    }
}

/// One limit as stored.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Limit {
    /// Kind or dependency.
    pub scope: LimitScope,
    /// Its name.
    pub value: String,
    /// At most this many running at once over the fleet.
    pub max_running: Option<u32>,
    /// At most this many attempts started in any one second over the fleet.
    pub per_second: Option<u32>,
    /// The starts of the last second.
    #[serde(skip)]
    pub window: RateWindow,
    /// Why it was set.
    pub reason: Option<String>,
    /// Who set it.
    pub actor: String,
    /// When it was set.
    pub set_at: DateTime<Utc>,
}

/// How many operations of one kind and dependency run now (claims held, buffered or
/// running), as a claim counts them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunningCount {
    /// The kind.
    pub kind: String,
    /// The dependency, if the operations name one.
    pub dependency: Option<String>,
    /// How many.
    pub running: u32,
}

/// What one claim may take under the limits in force: for each limited kind and dependency, how
/// many more may start now (the smallest of the room under its running limit and under its
/// rate). Decided here; stores apply it.
#[derive(Clone, Debug, PartialEq)]
pub struct ClaimAllowance {
    now: DateTime<Utc>,
    rooms: Vec<(LimitScope, String, u32)>,
}

impl ClaimAllowance {
    /// The allowance under `limits` with `running` operations (grouped by kind and dependency),
    /// at `now` (the store's clock). The claim's time is never before a start the windows have
    /// recorded, so that a claim whose clock lags another's still counts that one's starts.
    pub fn new(limits: &[Limit], running: &[RunningCount], now: DateTime<Utc>) -> ClaimAllowance {
        let now = limits
            .iter()
            .filter_map(|l| l.window.last_slot_start())
            .fold(now, DateTime::max);
        let rooms = limits
            .iter()
            .map(|l| {
                let running: u32 = running
                    .iter()
                    .filter(|r| match l.scope {
                        LimitScope::Kind => r.kind == l.value,
                        LimitScope::Dependency => r.dependency.as_deref() == Some(&l.value),
                    })
                    .map(|r| r.running)
                    .sum();
                let by_running = l
                    .max_running
                    .map_or(u32::MAX, |m| m.saturating_sub(running));
                let by_rate = l.per_second.map_or(u32::MAX, |r| {
                    r.saturating_sub(l.window.starts_within_second(now))
                });
                (l.scope, l.value.clone(), by_running.min(by_rate))
            })
            .collect();
        ClaimAllowance { now, rooms }
    }

    /// The time the claim is made at: claimed_at, the lease's start and the windows' record.
    pub fn now(&self) -> DateTime<Utc> {
        self.now
    }

    /// The names in `scope` that may take nothing now: a claim leaves their operations out of
    /// its walk, so they do not use up its batch.
    pub fn blocked(&self, scope: LimitScope) -> Vec<String> {
        self.rooms
            .iter()
            .filter(|(s, _, room)| *s == scope && *room == 0)
            .map(|(_, v, _)| v.clone())
            .collect()
    }

    /// The names in `scope` with room for some but not unbounded, and that room, as two
    /// columns: a claim takes at most that many of each, oldest eligible first.
    pub fn caps(&self, scope: LimitScope) -> (Vec<String>, Vec<i64>) {
        self.rooms
            .iter()
            .filter(|(s, _, room)| *s == scope && *room > 0 && *room < u32::MAX)
            .map(|(_, v, room)| (v.clone(), i64::from(*room)))
            .unzip()
    }

    /// Takes one operation of `kind` calling `dependency`, if every limit on them has room:
    /// for stores that pick candidates first and apply the allowance in order.
    pub fn take(&mut self, kind: &str, dependency: Option<&str>) -> bool {
        let hits = |s: LimitScope, v: &str| match s {
            LimitScope::Kind => v == kind,
            LimitScope::Dependency => Some(v) == dependency,
        };
        if self
            .rooms
            .iter()
            .any(|(s, v, room)| hits(*s, v) && *room == 0)
        {
            return false;
        }
        for (s, v, room) in &mut self.rooms {
            if hits(*s, v) && *room != u32::MAX {
                *room -= 1;
            }
        }
        true
    }
}

/// The names in `scope` that carry a running limit: those whose running operations a claim must
/// count.
pub fn counted(limits: &[Limit], scope: LimitScope) -> Vec<&str> {
    limits
        .iter()
        .filter(|l| l.scope == scope && l.max_running.is_some())
        .map(|l| l.value.as_str())
        .collect()
}

impl LimitUse {
    /// `limit` with `running` operations now, and its starts of the second up to `now`.
    pub fn new(limit: Limit, running: u64, now: DateTime<Utc>) -> LimitUse {
        LimitUse {
            started_last_second: limit.window.starts_within_second(now),
            running,
            limit,
        }
    }
}

/// Records in each rate-limited window the claims just made at `now` (each `(kind,
/// dependency)` one start); returns the limits whose window changed, to be written back.
pub fn record_starts<'a>(
    limits: &mut [Limit],
    claimed: impl IntoIterator<Item = (&'a str, Option<&'a str>)>,
    now: DateTime<Utc>,
) -> Vec<Limit> {
    let claimed: Vec<(&str, Option<&str>)> = claimed.into_iter().collect();
    limits
        .iter_mut()
        .filter(|l| l.per_second.is_some())
        .map(|l| {
            let n = claimed
                .iter()
                .filter(|(kind, dependency)| match l.scope {
                    LimitScope::Kind => *kind == l.value,
                    LimitScope::Dependency => *dependency == Some(l.value.as_str()),
                })
                .count();
            l.window.record(now, n as u32);
            l.clone()
        })
        .collect()
}

/// Set (or replace) the limit on `scope`/`value`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LimitSetParams {
    /// Kind or dependency.
    pub scope: LimitScope,
    /// Its name.
    pub value: String,
    /// At most this many running at once.
    pub max_running: Option<u32>,
    /// At most this many attempts started per second.
    pub per_second: Option<u32>,
    /// Why.
    pub reason: Option<String>,
    /// Who.
    pub actor: String,
}

impl LimitSetParams {
    /// Refuses a limit that limits nothing or stops everything (a pause does that, and says so).
    pub fn check(&self) -> Result<()> {
        if self.max_running.is_none() && self.per_second.is_none() {
            return Err(Error::InvalidInput(
                "a limit needs a running limit, a rate, or both".into(),
            ));
        }
        if self.max_running == Some(0) || self.per_second == Some(0) {
            return Err(Error::InvalidInput(format!(
                "a limit of 0 would stop every {} {}: pause it instead: `oprec pause --{} {}`",
                self.scope, self.value, self.scope, self.value
            )));
        }
        Ok(())
    }
}

/// Remove the limit on `scope`/`value`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LimitRemoveParams {
    /// Kind or dependency.
    pub scope: LimitScope,
    /// Its name.
    pub value: String,
}

/// A limit and its use now: what `oprec limits`, `stats` and the dashboard show.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LimitUse {
    /// The limit.
    #[serde(flatten)]
    pub limit: Limit,
    /// Operations of its kind or dependency running now (claims held).
    pub running: u64,
    /// Attempts started against it in the last second (rate-limited ones; else 0).
    pub started_last_second: u32,
}

/// The store side of fleet limits: setting them, listing them with their use. Claims enforce
/// them (every `WorkerStore` claim).
#[async_trait]
pub trait LimitStore: Store {
    /// Sets or replaces a limit (keeping its window of recent starts).
    async fn limit_set(&self, params: LimitSetParams) -> Result<Limit>;

    /// Removes a limit; false when there was none.
    async fn limit_remove(&self, params: LimitRemoveParams) -> Result<bool>;

    /// Every limit with its use, by scope and name.
    async fn limit_list(&self) -> Result<Vec<LimitUse>>;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: i64) -> DateTime<Utc> {
        DateTime::from_timestamp_millis(1_800_000_000_000 + ms).unwrap()
    }

    fn limit(scope: LimitScope, value: &str, running: Option<u32>, rate: Option<u32>) -> Limit {
        Limit {
            scope,
            value: value.into(),
            max_running: running,
            per_second: rate,
            window: RateWindow::default(),
            reason: None,
            actor: "test".into(),
            set_at: at(0),
        }
    }

    #[test]
    fn the_room_is_the_smaller_of_running_and_rate() {
        let mut l = limit(LimitScope::Dependency, "provider", Some(5), Some(3));
        l.window.record(at(0), 2);
        let running = [
            RunningCount {
                kind: "a".into(),
                dependency: Some("provider".into()),
                running: 1,
            },
            RunningCount {
                kind: "b".into(),
                dependency: None,
                running: 9,
            },
        ];
        let mut a = ClaimAllowance::new(&[l], &running, at(500));
        assert_eq!(
            a.caps(LimitScope::Dependency),
            (vec!["provider".into()], vec![1])
        );
        assert!(a.take("a", Some("provider")));
        assert!(
            !a.take("c", Some("provider")),
            "the rate's one start is used"
        );
        assert!(a.take("b", None), "other work is not limited");
        assert_eq!(
            a.blocked(LimitScope::Dependency),
            vec!["provider".to_owned()]
        );
    }

    #[test]
    fn a_full_running_limit_blocks_its_kind_only() {
        let l = limit(LimitScope::Kind, "mail.send", Some(2), None);
        let running = [RunningCount {
            kind: "mail.send".into(),
            dependency: None,
            running: 2,
        }];
        let mut a = ClaimAllowance::new(&[l], &running, at(0));
        assert_eq!(a.blocked(LimitScope::Kind), vec!["mail.send".to_owned()]);
        assert!(a.blocked(LimitScope::Dependency).is_empty());
        assert!(!a.take("mail.send", None));
        assert!(
            a.take("other", Some("mail.send")),
            "a dependency of the same name is not the kind"
        );
    }

    #[test]
    fn no_second_holds_more_starts_than_the_rate() {
        // Claims every 7 ms for 5 s, each taking what the window allows: count the starts of
        // every one-second span (at 1 ms steps) afterwards.
        let mut l = limit(LimitScope::Dependency, "p", None, Some(50));
        let mut starts: Vec<i64> = Vec::new();
        let mut t = 0;
        while t < 5000 {
            let mut a = ClaimAllowance::new(std::slice::from_ref(&l), &[], at(t));
            let mut n = 0;
            while n < 10 && a.take("k", Some("p")) {
                n += 1;
            }
            let now = a.now();
            record_starts(
                std::slice::from_mut(&mut l),
                (0..n).map(|_| ("k", Some("p"))),
                now,
            );
            starts.extend((0..n).map(|_| now.timestamp_millis()));
            t += 7;
        }
        let base = at(0).timestamp_millis();
        let most = (0..5000)
            .map(|from| {
                starts
                    .iter()
                    .filter(|s| **s >= base + from && **s < base + from + 1000)
                    .count()
            })
            .max()
            .unwrap();
        assert!(most <= 50, "{most} starts in one second");
        assert!(
            starts.len() >= 4 * 45,
            "the rate is used, not starved: {}",
            starts.len()
        );
    }

    #[test]
    fn a_lagging_clock_still_counts_the_latest_starts() {
        let mut l = limit(LimitScope::Kind, "k", None, Some(1));
        l.window.record(at(1000), 1);
        let a = ClaimAllowance::new(std::slice::from_ref(&l), &[], at(400));
        assert!(a.now() >= at(1000));
        assert_eq!(a.blocked(LimitScope::Kind), vec!["k".to_owned()]);
    }

    #[test]
    fn the_window_round_trips_and_forgets_old_slots() {
        let mut w = RateWindow::default();
        w.record(at(0), 3);
        w.record(at(10), 1);
        w.record(at(60), 2);
        assert_eq!(w.starts_within_second(at(60)), 6);
        assert_eq!(RateWindow::from_json(Some(&w.to_json())), w);
        assert_eq!(
            RateWindow::from_json(Some("not json")),
            RateWindow::default()
        );
        w.record(at(1100), 0);
        assert_eq!(w.slots.len(), 0, "{w:?}");
    }

    #[test]
    fn limits_of_nothing_or_zero_are_refused() {
        let p = LimitSetParams {
            scope: LimitScope::Kind,
            value: "k".into(),
            max_running: None,
            per_second: None,
            reason: None,
            actor: "a".into(),
        };
        assert!(p.check().is_err());
        let zero = LimitSetParams {
            max_running: Some(0),
            ..p.clone()
        };
        assert!(
            zero.check()
                .unwrap_err()
                .to_string()
                .contains("oprec pause --kind k")
        );
        assert!(
            LimitSetParams {
                per_second: Some(50),
                ..p
            }
            .check()
            .is_ok()
        );
    }
}
