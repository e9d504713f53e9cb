//! Recurring operations: a kind declared with a [`Schedule`] (a cron expression, seconds
//! optional, read in a named time zone) gets one operation per tick, enqueued by the maintenance
//! leader with the idempotency key [`tick_key`] so that two leaders overlapping during a failover
//! still make one. This module decides, without I/O, which ticks are due
//! ([`Schedule::plan`]): ticks late by no more than the schedule's grace each run; ticks older
//! than that were missed (everything was down) and follow the schedule's [`Missed`] rule.
//!
//! The schedule's state (the last tick handled, the last operation, the next tick) lives in the
//! `operation_schedules` table ([`ScheduleStore`]).

use std::str::FromStr;

use async_trait::async_trait;
use chrono::{DateTime, Duration, SecondsFormat, Utc};
use chrono_tz::Tz;
use serde::Serialize;
use serde_json::Value;

use crate::status::named_enum;
use crate::{Error, OperationId, Result, Status, Store};

named_enum! {
    /// What happens to the ticks missed while nothing ran (older than the schedule's grace when
    /// the leader sees them).
    Missed, "missed-tick rule" {
        /// One operation, for the latest missed tick; the earlier missed ticks make none.
        RunOnce => "run_once",
        /// No operation for missed ticks: the schedule waits for its next tick.
        Skip => "skip",
    }
}

/// How late a tick may be seen and still run as itself, unless the schedule says otherwise:
/// longer than a leader failover (a leader lease), so a failover loses no tick.
pub const DEFAULT_GRACE: Duration = Duration::seconds(60);

/// The most late ticks one pass enqueues for one schedule (an every-second schedule with a
/// grace of an hour would otherwise enqueue 3,600 at once); the rest count as missed.
pub const MAX_TICKS_PER_PASS: usize = 100;

/// A kind's schedule: when its operations are due, in which zone, and what to do with missed
/// ticks.
#[derive(Clone, Debug)]
pub struct Schedule {
    expression: String,
    cron: cron::Schedule,
    zone: Tz,
    missed: Missed,
    grace: Duration,
    payload: Value,
}

impl PartialEq for Schedule {
    fn eq(&self, other: &Self) -> bool {
        self.expression == other.expression
            && self.zone == other.zone
            && self.missed == other.missed
            && self.grace == other.grace
            && self.payload == other.payload
    }
}

/// What one pass does for one schedule: the ticks to enqueue (oldest first), the tick the
/// schedule has handled up to, and its next tick.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TickPlan {
    /// Ticks to enqueue now, oldest first, each with the idempotency key [`tick_key`].
    pub enqueue: Vec<DateTime<Utc>>,
    /// The latest tick at or before now (handled: enqueued or skipped); `None` when none fell
    /// since the last one handled.
    pub handled_up_to: Option<DateTime<Utc>>,
    /// How many due ticks make no operation (missed and skipped, or collapsed by `run_once`).
    pub dropped: u64,
    /// The first tick after now, if the expression has one.
    pub next: Option<DateTime<Utc>>,
}

/// The idempotency key of the operation for `tick`: `schedule:` and the tick in RFC 3339, UTC,
/// to the second.
pub fn tick_key(tick: DateTime<Utc>) -> String {
    format!("schedule:{}", tick_text(tick))
}

/// The tick as the payload's `tick` field and the key carry it: RFC 3339, UTC, to the second.
pub fn tick_text(tick: DateTime<Utc>) -> String {
    tick.to_rfc3339_opts(SecondsFormat::Secs, true)
}

impl Schedule {
    /// A schedule on the cron expression `expression`: six fields (second, minute, hour, day
    /// of month, month, day of week), an optional seventh (year), or five (the seconds left out
    /// mean second 0); `@hourly`, `@daily` and the like are accepted. UTC, [`Missed::RunOnce`],
    /// [`DEFAULT_GRACE`] and the payload `{}` until said otherwise.
    pub fn cron(expression: &str) -> Result<Self> {
        let trimmed = expression.trim();
        let fields = trimmed.split_whitespace().count();
        let full = match fields {
            _ if trimmed.starts_with('@') => trimmed.to_owned(),
            5 => format!("0 {trimmed}"),
            6 | 7 => trimmed.to_owned(),
            n => {
                return Err(Error::InvalidInput(format!(
                    "schedule {expression:?} has {n} fields; a cron expression has 5 (minute hour day-of-month month day-of-week), 6 (second first) or 7 (year last)"
                )));
            }
        };
        let cron = cron::Schedule::from_str(&full).map_err(|e| {
            Error::InvalidInput(format!(
                "schedule {expression:?} is not a cron expression: {e}"
            ))
        })?;
        if cron.upcoming(Utc).next().is_none() {
            return Err(Error::InvalidInput(format!(
                "schedule {expression:?} has no tick in the future"
            )));
        }
        Ok(Schedule {
            expression: trimmed.to_owned(),
            cron,
            zone: Tz::UTC,
            missed: Missed::RunOnce,
            grace: DEFAULT_GRACE,
            payload: Value::Object(Default::default()),
        })
    }

    /// Reads the expression in the IANA time zone `zone` (`Europe/Paris`): a daily 09:00 is
    /// 09:00 local time, summer and winter.
    pub fn in_zone(mut self, zone: &str) -> Result<Self> {
        self.zone = zone.parse::<Tz>().map_err(|_| {
            Error::InvalidInput(format!(
                "time zone {zone:?} is not an IANA zone name (like UTC, Europe/Paris, America/New_York)"
            ))
        })?;
        Ok(self)
    }

    /// What happens to ticks missed while nothing ran (default [`Missed::RunOnce`]).
    pub fn missed(mut self, missed: Missed) -> Self {
        self.missed = missed;
        self
    }

    /// How late a tick may be seen and still run as itself (default [`DEFAULT_GRACE`]); older
    /// ticks are missed. Refuses a negative grace.
    pub fn grace(mut self, grace: Duration) -> Result<Self> {
        if grace < Duration::zero() {
            return Err(Error::InvalidInput("the grace must not be negative".into()));
        }
        self.grace = grace;
        Ok(self)
    }

    /// The fixed payload of every operation (default `{}`); each operation's payload is this
    /// object with `tick` (the tick, RFC 3339 in UTC) added. Refuses a payload that is not a
    /// JSON object.
    pub fn payload(mut self, payload: Value) -> Result<Self> {
        if !payload.is_object() {
            return Err(Error::InvalidInput(
                "a schedule's payload must be a JSON object (the tick is added to it)".into(),
            ));
        }
        self.payload = payload;
        Ok(self)
    }

    /// The expression as declared.
    pub fn expression(&self) -> &str {
        &self.expression
    }

    /// The time zone's name.
    pub fn zone(&self) -> &str {
        self.zone.name()
    }

    /// The missed-tick rule.
    pub fn missed_rule(&self) -> Missed {
        self.missed
    }

    /// How late a tick may run as itself.
    pub fn grace_period(&self) -> Duration {
        self.grace
    }

    /// The fixed payload.
    pub fn fixed_payload(&self) -> &Value {
        &self.payload
    }

    /// The payload of the operation for `tick`: the fixed payload with `tick` set.
    pub fn payload_for(&self, tick: DateTime<Utc>) -> Value {
        let mut payload = self.payload.clone();
        if let Value::Object(map) = &mut payload {
            map.insert("tick".into(), Value::String(tick_text(tick)));
        }
        payload
    }

    /// The first tick strictly after `t`. (In the hour a zone repeats in autumn the cron crate
    /// searches by local time and may offer the repeated hour's first occurrence again: only a
    /// tick truly after `t` counts.)
    pub fn next_after(&self, t: DateTime<Utc>) -> Option<DateTime<Utc>> {
        self.cron
            .after(&t.with_timezone(&self.zone))
            .take(4)
            .map(|d| d.with_timezone(&Utc))
            .find(|d| *d > t)
    }

    /// The latest tick at or before `t`.
    fn latest_at_or_before(&self, t: DateTime<Utc>) -> Option<DateTime<Utc>> {
        let just_after = t + Duration::nanoseconds(1);
        self.cron
            .after(&just_after.with_timezone(&self.zone))
            .rev()
            .take(4)
            .map(|d| d.with_timezone(&Utc))
            .find(|d| *d <= t && self.is_tick(*d))
    }

    /// Whether `t` is a tick as [`Schedule::next_after`] finds them (going back, the cron crate
    /// also offers the second occurrence of a repeated autumn hour, which going forward it skips:
    /// the forward rule is the one kept).
    fn is_tick(&self, t: DateTime<Utc>) -> bool {
        self.next_after(t - Duration::nanoseconds(1)) == Some(t)
    }

    /// Which ticks to enqueue at `now`, the schedule having handled every tick up to `from`
    /// (its last tick handled, or when it was first declared). Ticks in `(from, now]` no older
    /// than the grace each run (at most [`MAX_TICKS_PER_PASS`], the latest ones); older ones
    /// were missed: [`Missed::RunOnce`] enqueues the latest of them, [`Missed::Skip`] none.
    pub fn plan(&self, from: DateTime<Utc>, now: DateTime<Utc>) -> TickPlan {
        let next = self.next_after(now);
        let Some(latest) = self.latest_at_or_before(now).filter(|t| *t > from) else {
            return TickPlan {
                enqueue: Vec::new(),
                handled_up_to: None,
                dropped: 0,
                next,
            };
        };
        let cutoff = now - self.grace;
        // The late ticks, latest first, stopping at the cutoff, `from` or the cap.
        let mut late = vec![latest];
        let mut earlier = self.cron.after(&latest.with_timezone(&self.zone));
        while late.len() < MAX_TICKS_PER_PASS {
            match earlier.next_back().map(|t| t.with_timezone(&Utc)) {
                // Strictly earlier each step (the autumn hour may offer a tick out of order).
                Some(t) if late.last().is_some_and(|l| t >= *l) || !self.is_tick(t) => continue,
                Some(t) if t > from && t >= cutoff => late.push(t),
                _ => break,
            }
        }
        late.retain(|t| *t >= cutoff);
        late.reverse();
        let oldest_late = late.first().copied();
        // The missed ticks: after `from`, before the oldest late tick (or at/before the cutoff).
        let missed_bound = match oldest_late {
            Some(t) => t - Duration::nanoseconds(1),
            None => now,
        };
        let latest_missed = self.latest_at_or_before(missed_bound).filter(|t| *t > from);
        let missed_count = latest_missed
            .map(|last| self.count_between(from, last))
            .unwrap_or(0);
        let mut enqueue = Vec::new();
        let mut dropped = missed_count;
        if let (Missed::RunOnce, Some(t)) = (self.missed, latest_missed) {
            enqueue.push(t);
            dropped -= 1;
        }
        enqueue.extend(late);
        TickPlan {
            enqueue,
            handled_up_to: Some(latest),
            dropped,
            next,
        }
    }

    /// How many ticks fall in `(from, last]`, counted up to a bound (for logs only).
    fn count_between(&self, from: DateTime<Utc>, last: DateTime<Utc>) -> u64 {
        self.cron
            .after(&from.with_timezone(&self.zone))
            .take(1_000_000)
            .take_while(|t| t.with_timezone(&Utc) <= last)
            .count() as u64
    }
}

/// A schedule as workers declare it: the kind and its schedule.
#[derive(Clone, Debug, PartialEq)]
pub struct ScheduleDeclaration {
    /// The kind.
    pub kind: String,
    /// Its schedule.
    pub schedule: Schedule,
}

/// Declare the schedules of the kinds a worker runs (each upserted, the latest declaration
/// winning, its last tick kept), and remove the schedules of `unscheduled`, kinds it runs that
/// no longer declare one.
#[derive(Clone, Debug, PartialEq)]
pub struct ScheduleDeclareParams {
    /// The declaring worker's id.
    pub declared_by: String,
    /// One per scheduled kind.
    pub schedules: Vec<ScheduleDeclaration>,
    /// Kinds the worker runs without a schedule: their rows are removed.
    pub unscheduled: Vec<String>,
}

/// Record one pass's work for a schedule, fenced by the last tick the pass read (so a second
/// leader's pass over the same ticks changes nothing).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScheduleAdvanceParams {
    /// The kind.
    pub kind: String,
    /// The last tick as the pass read it (`None`: never ticked).
    pub read_last_tick: Option<DateTime<Utc>>,
    /// The latest tick handled.
    pub last_tick: DateTime<Utc>,
    /// The latest tick enqueued and its operation, if the pass enqueued one.
    pub enqueued: Option<(DateTime<Utc>, OperationId)>,
    /// The next tick.
    pub next_tick: Option<DateTime<Utc>>,
}

/// A row of `operation_schedules`, with the status of its last operation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ScheduleRecord {
    /// The kind.
    pub kind: String,
    /// The cron expression as declared.
    pub expression: String,
    /// The time zone.
    pub timezone: String,
    /// The missed-tick rule.
    pub missed: Missed,
    /// How late a tick may run as itself, in seconds.
    pub grace_secs: i64,
    /// The fixed payload.
    pub payload: Value,
    /// When the schedule was first declared (ticks before it never run).
    pub declared_at: DateTime<Utc>,
    /// The worker that last declared it.
    pub declared_by: String,
    /// The latest tick handled (enqueued or skipped).
    pub last_tick: Option<DateTime<Utc>>,
    /// The latest tick enqueued.
    pub last_enqueued_tick: Option<DateTime<Utc>>,
    /// Its operation.
    pub last_operation_id: Option<OperationId>,
    /// That operation's status (`None` when it was removed by retention, or there is none).
    pub last_operation_status: Option<Status>,
    /// The next tick as last computed.
    pub next_tick: Option<DateTime<Utc>>,
    /// When the row last changed.
    pub updated_at: DateTime<Utc>,
}

impl ScheduleRecord {
    /// The schedule the row declares; an error names the kind when the row cannot be read back
    /// (written by another version).
    pub fn schedule(&self) -> Result<Schedule> {
        let named = |e: Error| Error::InvalidInput(format!("schedule of {}: {e}", self.kind));
        Schedule::cron(&self.expression)
            .and_then(|s| s.in_zone(&self.timezone))
            .and_then(|s| s.grace(Duration::seconds(self.grace_secs)))
            .and_then(|s| s.payload(self.payload.clone()))
            .map(|s| s.missed(self.missed))
            .map_err(named)
    }

    /// Where the next pass starts: the last tick handled, or the declaration.
    pub fn handled_up_to(&self) -> DateTime<Utc> {
        self.last_tick.unwrap_or(self.declared_at)
    }
}

/// The `operation_schedules` table: workers declare, the maintenance leader advances, operators
/// list.
#[async_trait]
pub trait ScheduleStore: Store {
    /// Upserts the declared schedules (keeping each one's last tick) and removes the rows of
    /// the unscheduled kinds.
    async fn schedule_declare(&self, params: ScheduleDeclareParams) -> Result<()>;

    /// Records a pass, fenced by the last tick read; false when another pass got there first.
    async fn schedule_advance(&self, params: ScheduleAdvanceParams) -> Result<bool>;

    /// Every schedule, by kind, with its last operation's status.
    async fn schedule_list(&self) -> Result<Vec<ScheduleRecord>>;
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn utc(y: i32, mo: u32, d: u32, h: u32, mi: u32, s: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(y, mo, d, h, mi, s).unwrap()
    }

    #[test]
    fn five_fields_mean_second_zero_and_six_fields_carry_seconds() {
        let five = Schedule::cron("*/5 * * * *").unwrap();
        let six = Schedule::cron("0 */5 * * * *").unwrap();
        let t = utc(2026, 3, 1, 10, 2, 30);
        assert_eq!(five.next_after(t), Some(utc(2026, 3, 1, 10, 5, 0)));
        assert_eq!(six.next_after(t), six.next_after(t));
        assert_eq!(five.next_after(t), six.next_after(t));
        let every_second = Schedule::cron("* * * * * *").unwrap();
        assert_eq!(every_second.next_after(t), Some(t + Duration::seconds(1)));
        assert!(Schedule::cron("@hourly").is_ok());
    }

    #[test]
    fn bad_expressions_and_zones_are_refused_with_what_is_wrong() {
        let e = Schedule::cron("* * *").unwrap_err().to_string();
        assert!(e.contains("has 3 fields"), "{e}");
        let e = Schedule::cron("0 61 * * *").unwrap_err().to_string();
        assert!(e.contains("is not a cron expression"), "{e}");
        let e = Schedule::cron("* * * * *")
            .unwrap()
            .in_zone("Mars/Olympus")
            .unwrap_err()
            .to_string();
        assert!(e.contains("\"Mars/Olympus\" is not an IANA zone"), "{e}");
        let e = Schedule::cron("* * * * *")
            .unwrap()
            .payload(serde_json::json!([1]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("must be a JSON object"), "{e}");
        assert!("later".parse::<Missed>().is_err());
        assert_eq!("skip".parse::<Missed>().unwrap(), Missed::Skip);
    }

    #[test]
    fn a_zone_keeps_local_time_across_daylight_saving() {
        // 09:00 in Paris is 08:00 UTC in winter and 07:00 UTC in summer.
        let s = Schedule::cron("0 9 * * *")
            .unwrap()
            .in_zone("Europe/Paris")
            .unwrap();
        assert_eq!(
            s.next_after(utc(2026, 3, 27, 12, 0, 0)),
            Some(utc(2026, 3, 28, 8, 0, 0))
        );
        assert_eq!(
            s.next_after(utc(2026, 3, 28, 12, 0, 0)),
            Some(utc(2026, 3, 29, 7, 0, 0))
        );
        // 02:30 does not exist in Paris on 2026-03-29 (02:00 -> 03:00): that day has no tick.
        let s = Schedule::cron("30 2 * * *")
            .unwrap()
            .in_zone("Europe/Paris")
            .unwrap();
        assert_eq!(
            s.next_after(utc(2026, 3, 28, 12, 0, 0)),
            Some(utc(2026, 3, 30, 0, 30, 0))
        );
        // 02:30 happens twice on 2026-10-25 (03:00 -> 02:00): one tick, at the first.
        let first = s.next_after(utc(2026, 10, 24, 12, 0, 0)).unwrap();
        let second = s.next_after(first).unwrap();
        assert_eq!(first, utc(2026, 10, 25, 0, 30, 0));
        assert_eq!(second, utc(2026, 10, 26, 1, 30, 0));
        // Every quarter hour through the repeated hour: always forward, never twice; the
        // repeated hour's local times tick once, at their first occurrence, so the hour after
        // (01:00-01:45 UTC, 02:00-02:45 again in Paris) has no tick.
        let s = Schedule::cron("*/15 * * * *")
            .unwrap()
            .in_zone("Europe/Paris")
            .unwrap();
        let mut t = utc(2026, 10, 24, 23, 0, 0);
        let mut seen = Vec::new();
        for _ in 0..16 {
            let next = s.next_after(t).unwrap();
            assert!(next > t, "{next} after {t}");
            seen.push(next);
            t = next;
        }
        assert_eq!(seen.last(), Some(&utc(2026, 10, 25, 4, 0, 0)));
        assert!(
            !seen
                .iter()
                .any(|t| *t >= utc(2026, 10, 25, 1, 0, 0) && *t < utc(2026, 10, 25, 2, 0, 0))
        );
        // And a plan over the repeated hour enqueues each tick once, in order, every tick
        // outside the repeated hour included (inside it, the cron crate's search by local time
        // may offer some of the second occurrences: README, "Recurring operations").
        let plan = s
            .clone()
            .grace(Duration::hours(3))
            .unwrap()
            .plan(utc(2026, 10, 24, 23, 0, 0), utc(2026, 10, 25, 2, 0, 0));
        assert!(
            plan.enqueue.windows(2).all(|w| w[0] < w[1]),
            "{:?}",
            plan.enqueue
        );
        for quarter in 1..=8 {
            let t = utc(2026, 10, 24, 23, 0, 0) + Duration::minutes(15 * quarter);
            let t = if t >= utc(2026, 10, 25, 1, 0, 0) {
                utc(2026, 10, 25, 2, 0, 0)
            } else {
                t
            };
            assert!(plan.enqueue.contains(&t), "{t} in {:?}", plan.enqueue);
        }
        assert!(plan.enqueue.len() <= 12, "{:?}", plan.enqueue);
    }

    #[test]
    fn on_time_ticks_each_run() {
        let s = Schedule::cron("* * * * * *").unwrap();
        let from = utc(2026, 1, 1, 0, 0, 0);
        let plan = s.plan(from, from + Duration::milliseconds(2500));
        assert_eq!(
            plan.enqueue,
            [from + Duration::seconds(1), from + Duration::seconds(2)]
        );
        assert_eq!(plan.handled_up_to, Some(from + Duration::seconds(2)));
        assert_eq!(plan.next, Some(from + Duration::seconds(3)));
        assert_eq!(plan.dropped, 0);
        // Nothing due: nothing handled.
        let plan = s.plan(from, from + Duration::milliseconds(500));
        assert!(plan.enqueue.is_empty());
        assert_eq!(plan.handled_up_to, None);
        assert_eq!(plan.next, Some(from + Duration::seconds(1)));
        // A tick exactly at `from` was handled already.
        let plan = s.plan(from, from);
        assert!(plan.enqueue.is_empty());
    }

    #[test]
    fn missed_ticks_run_once_for_the_latest_or_are_skipped() {
        let from = utc(2026, 1, 1, 0, 0, 0);
        let now = from + Duration::minutes(10) + Duration::milliseconds(300);
        let every_minute = Schedule::cron("* * * * *")
            .unwrap()
            .grace(Duration::seconds(5))
            .unwrap();
        // Ticks at :01 .. :10; :10 is 0.3 s late (runs), :01 .. :09 were missed.
        let once = every_minute.clone().missed(Missed::RunOnce).plan(from, now);
        assert_eq!(
            once.enqueue,
            [from + Duration::minutes(9), from + Duration::minutes(10)]
        );
        assert_eq!(once.dropped, 8);
        assert_eq!(once.handled_up_to, Some(from + Duration::minutes(10)));
        let skip = every_minute.clone().missed(Missed::Skip).plan(from, now);
        assert_eq!(skip.enqueue, [from + Duration::minutes(10)]);
        assert_eq!(skip.dropped, 9);
        // Past the grace for every tick: run_once makes exactly one, skip none.
        let later = from + Duration::minutes(10) + Duration::seconds(30);
        let once = every_minute
            .clone()
            .missed(Missed::RunOnce)
            .plan(from, later);
        assert_eq!(once.enqueue, [from + Duration::minutes(10)]);
        assert_eq!(once.handled_up_to, Some(from + Duration::minutes(10)));
        assert_eq!(once.next, Some(from + Duration::minutes(11)));
        let skip = every_minute.missed(Missed::Skip).plan(from, later);
        assert!(skip.enqueue.is_empty());
        assert_eq!(skip.dropped, 10);
        assert_eq!(skip.handled_up_to, Some(from + Duration::minutes(10)));
    }

    #[test]
    fn late_ticks_are_capped_per_pass() {
        let s = Schedule::cron("* * * * * *")
            .unwrap()
            .missed(Missed::Skip)
            .grace(Duration::hours(1))
            .unwrap();
        let from = utc(2026, 1, 1, 0, 0, 0);
        let plan = s.plan(from, from + Duration::minutes(30));
        assert_eq!(plan.enqueue.len(), MAX_TICKS_PER_PASS);
        assert_eq!(plan.enqueue.last(), Some(&(from + Duration::minutes(30))));
        assert_eq!(plan.dropped, 1800 - MAX_TICKS_PER_PASS as u64);
    }

    #[test]
    fn the_payload_carries_the_tick_and_the_key_names_it() {
        let s = Schedule::cron("0 0 * * *")
            .unwrap()
            .payload(serde_json::json!({"report": "daily"}))
            .unwrap();
        let tick = utc(2026, 12, 3, 0, 0, 0);
        assert_eq!(
            s.payload_for(tick),
            serde_json::json!({"report": "daily", "tick": "2026-12-03T00:00:00Z"})
        );
        assert_eq!(tick_key(tick), "schedule:2026-12-03T00:00:00Z");
    }
}
