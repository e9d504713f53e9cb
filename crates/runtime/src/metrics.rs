//! The worker's metrics, through the `metrics` facade (feature `metrics`): whatever recorder the
//! program installs (Prometheus, StatsD, OpenTelemetry) receives them; without one they cost
//! nothing. Every name is a constant in [`names`], so the CLI, the dashboard and a program that
//! embeds [`Worker`](crate::Worker) emit the same series.
//!
//! - counters of the worker's own work, from its [`Stats`], refreshed every second; those whose
//!   operation is known when they are counted (claims, attempts, outcomes, promotions to dead)
//!   are labelled by kind, failure class and dependency, bounded by the worker's registry;
//! - `oprec_handler_duration_seconds`, a histogram per kind, recorded as each handler ends;
//! - gauges of the store's figures (what `oprec stats` shows), when
//!   [`WorkerConfig::figures_every`](crate::WorkerConfig::figures_every) asks for them: they
//!   cost a stats query per refresh.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;

use metrics::{counter, describe_counter, describe_gauge, describe_histogram, gauge};
use oprec_core::{NO_CLASS, OperatorStore, StatsReport};
use tokio_util::sync::CancellationToken;

use crate::tally::{Key, NONE, Series, Tally};
use crate::{Stats, StatsSnapshot};

/// The metric names, defined once.
pub mod names {
    /// Operations claimed, per kind and dependency (counter).
    pub const CLAIMS: &str = "oprec_claims_total";
    /// Attempts that succeeded, per kind and dependency (counter).
    pub const ATTEMPTS_SUCCEEDED: &str = "oprec_attempts_succeeded_total";
    /// Attempts that failed, per kind, failure class and dependency (counter).
    pub const ATTEMPTS_FAILED: &str = "oprec_attempts_failed_total";
    /// Outcomes written, per kind and attempt outcome (counter).
    pub const COMPLETIONS: &str = "oprec_completions_total";
    /// Promotions to dead this worker's attempts wrote, per kind, failure class, dependency and
    /// terminal reason (counter).
    pub const DEAD_PROMOTIONS: &str = "oprec_dead_promotions_total";
    /// How long handlers ran, per kind (histogram, seconds).
    pub const HANDLER_DURATION: &str = "oprec_handler_duration_seconds";
    /// Operations by status (gauge).
    pub const OPERATIONS: &str = "oprec_operations";
    /// Pending operations by last failure class (gauge).
    pub const PENDING: &str = "oprec_pending_operations";
    /// Attempts per succeeded operation (gauge).
    pub const ATTEMPTS_PER_SUCCESS: &str = "oprec_attempts_per_success";
    /// How long the most overdue eligible operation has waited (gauge, seconds).
    pub const OLDEST_ELIGIBLE_OVERDUE: &str = "oprec_oldest_eligible_overdue_seconds";
    /// Dead operations awaiting action per kind (gauge): not re-driven as new.
    pub const DEAD: &str = "oprec_dead_operations";
    /// Dead operations re-driven as new per kind (gauge): their copies carry the work on.
    pub const DEAD_REDRIVEN: &str = "oprec_dead_redriven_operations";
    /// Promotions to dead in the last hour, per kind (gauge).
    pub const DEAD_LAST_HOUR: &str = "oprec_dead_last_hour";
    /// Promotions to dead in the last day, per kind (gauge).
    pub const DEAD_LAST_DAY: &str = "oprec_dead_last_day";
    /// Promotions to dead in the last day, per code version (gauge).
    pub const DEAD_LAST_DAY_BY_CODE_VERSION: &str = "oprec_dead_last_day_by_code_version";
    /// Unknown outcomes awaiting reconciliation (gauge).
    pub const RECONCILING: &str = "oprec_reconciling_operations";
    /// Attempts in the last hour, per dependency (gauge).
    pub const ATTEMPTS_LAST_HOUR: &str = "oprec_attempts_last_hour";
    /// Age of the oldest unfinished operation (gauge, seconds).
    pub const BACKLOG_AGE: &str = "oprec_backlog_age_seconds";
    /// Unfinished operations by age bucket (gauge).
    pub const BACKLOG: &str = "oprec_backlog_operations";
    /// Pending operations of kinds no live worker handles (gauge).
    pub const UNHANDLED: &str = "oprec_unhandled_operations";
    /// Eligible pending operations a control in force holds back, per control (gauge, labelled
    /// `control="kind:NAME"`, `"failure_class:NAME"` or `"dependency:NAME"`).
    pub const HELD_BACK: &str = "oprec_held_back_operations";
    /// How long the oldest eligible operation a control holds back has waited past its time,
    /// per control (gauge, seconds).
    pub const HELD_BACK_OVERDUE: &str = "oprec_held_back_overdue_seconds";
    /// Finished operations removed by retention (counter).
    pub const RETENTION_REMOVED: &str = "oprec_retention_removed_total";
    /// Failed refreshes of the figures (counter).
    pub const REFRESH_ERRORS: &str = "oprec_metrics_refresh_errors_total";
}

/// The handler latency buckets, in seconds: from a local write to a slow remote call.
pub const LATENCY_BUCKETS: [f64; 14] = [
    0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
];

/// The gauges taken from the store's figures, with their help texts.
pub const GAUGES: &[(&str, &str)] = &[
    (names::OPERATIONS, "Operations by status."),
    (
        names::PENDING,
        "Pending operations by last failure class (none: not failed yet).",
    ),
    (
        names::ATTEMPTS_PER_SUCCESS,
        "Attempts recorded per succeeded operation (1 is perfect).",
    ),
    (
        names::OLDEST_ELIGIBLE_OVERDUE,
        "How long the most overdue eligible pending operation that no control holds back has \
         waited past its time.",
    ),
    (
        names::HELD_BACK,
        "Eligible pending operations a pause or postponement in force holds back, per control \
         (counted up to 10000).",
    ),
    (
        names::HELD_BACK_OVERDUE,
        "How long the oldest eligible operation a control holds back has waited past its time, \
         per control.",
    ),
    (
        names::DEAD,
        "Dead operations awaiting action per kind (re-driven as new ones are not counted).",
    ),
    (
        names::DEAD_REDRIVEN,
        "Dead operations re-driven as new per kind: their copies carry the work on.",
    ),
    (
        names::DEAD_LAST_HOUR,
        "Operations promoted to dead in the last hour, per kind.",
    ),
    (
        names::DEAD_LAST_DAY,
        "Operations promoted to dead in the last day, per kind.",
    ),
    (
        names::DEAD_LAST_DAY_BY_CODE_VERSION,
        "Operations promoted to dead in the last day, per code version of their last attempt.",
    ),
    (
        names::RECONCILING,
        "Unknown outcomes awaiting reconciliation.",
    ),
    (
        names::ATTEMPTS_LAST_HOUR,
        "Attempts that ended in the last hour, per dependency.",
    ),
    (
        names::BACKLOG_AGE,
        "Age of the oldest unfinished operation, by its creation time.",
    ),
    (
        names::BACKLOG,
        "Unfinished operations by age of their creation time.",
    ),
    (
        names::UNHANDLED,
        "Pending operations of a kind no live worker handles, per kind.",
    ),
];

/// A counter: its name, help text, and where its value comes from.
pub type CounterDef = (&'static str, &'static str, fn(&StatsSnapshot) -> u64);

/// The worker's labelled counters, with their help texts: counted per operation where its
/// outcome is known (see [`crate::Worker`]'s completer), by kind, class and dependency.
pub const LABELLED_COUNTERS: &[(&str, &str)] = &[
    (
        names::CLAIMS,
        "Operations claimed, per kind and dependency.",
    ),
    (
        names::ATTEMPTS_SUCCEEDED,
        "Attempts that succeeded, per kind and dependency.",
    ),
    (
        names::ATTEMPTS_FAILED,
        "Attempts that failed, per kind, failure class and dependency (class none: refused \
         without one).",
    ),
    (
        names::COMPLETIONS,
        "Outcomes written, per kind and attempt outcome.",
    ),
    (
        names::DEAD_PROMOTIONS,
        "Promotions to dead written by this worker's attempts and, while it leads, by its \
         rescuer (crash loops), per kind, failure class, dependency and reason (waiting \
         operations past their deadline are in oprec_deadline_dead_total).",
    ),
];

/// The worker's unlabelled counters: counted before an operation (and so its kind) is known, or
/// by the maintenance loops over many operations at once.
pub const COUNTERS: &[CounterDef] = &[
    (
        "oprec_stale_claims_total",
        "Writes refused because the claim was stale (lease taken over).",
        |s| s.stale_claims,
    ),
    (
        "oprec_wakeups_received_total",
        "Wake-ups taken off the transport.",
        |s| s.wakeups_received,
    ),
    (
        "oprec_wakeups_ignored_total",
        "Wake-ups with no effect (terminal, running, not eligible, unknown or paused).",
        |s| s.wakeups_ignored,
    ),
    (
        "oprec_claimed_ahead_of_wakeups_total",
        "Operations claimed from the store ahead of a broker's backlog (aged, or above the default priority).",
        |s| s.claimed_ahead,
    ),
    (
        "oprec_garbage_frames_total",
        "Deliveries that were not wake-up frames.",
        |s| s.garbage_frames,
    ),
    (
        "oprec_wakeups_published_total",
        "Wake-ups published.",
        |s| s.published,
    ),
    (
        "oprec_publish_errors_total",
        "Publishes that failed (the scheduler re-wakes later).",
        |s| s.publish_errors,
    ),
    (
        "oprec_vanished_attempts_total",
        "Expired leases recorded as vanished attempts.",
        |s| s.vanished,
    ),
    (
        "oprec_deadline_dead_total",
        "Operations ended because their deadline passed while waiting.",
        |s| s.deadline_dead,
    ),
    (
        "oprec_released_attempts_total",
        "Attempts released unfinished on shutdown.",
        |s| s.released,
    ),
    (
        "oprec_given_back_claims_total",
        "Claims never started, given back on shutdown with their attempts refunded.",
        |s| s.given_back,
    ),
    (
        "oprec_obsolete_total",
        "Operations cancelled as no longer needed.",
        |s| s.obsolete,
    ),
    (
        names::RETENTION_REMOVED,
        "Finished operations removed by retention, with their attempts and steps.",
        |s| s.retention_removed,
    ),
];

/// Registers every help text with the installed recorder (call once, after installing it).
pub fn describe() {
    describe_histogram!(
        names::HANDLER_DURATION,
        metrics::Unit::Seconds,
        "How long handlers ran, per kind."
    );
    for (name, help) in GAUGES {
        describe_gauge!(*name, *help);
    }
    for (name, help, _) in COUNTERS {
        describe_counter!(*name, *help);
    }
    for (name, help) in LABELLED_COUNTERS {
        describe_counter!(*name, *help);
    }
    describe_counter!(
        names::REFRESH_ERRORS,
        "Failed refreshes of the store's figures."
    );
}

/// How often the counters are refreshed from the worker's [`Stats`].
const COUNTERS_EVERY: Duration = Duration::from_secs(1);

/// Sets the counters from the worker's live counters.
fn record_counters(s: &StatsSnapshot) {
    for (name, _, pick) in COUNTERS {
        counter!(*name).absolute(pick(s));
    }
}

/// The labelled counters' handles, registered once per series.
#[derive(Default)]
struct Registered {
    handles: HashMap<Key, metrics::Counter>,
}

impl Registered {
    /// Sets every labelled counter from the tally.
    fn record(&mut self, tally: &Tally) {
        for (key, n) in tally.snapshot() {
            self.handles
                .entry(key)
                .or_insert_with(|| register(tally, key))
                .absolute(n);
        }
    }
}

/// The counter a labelled count goes to, with its label values.
fn register(tally: &Tally, (series, labels): Key) -> metrics::Counter {
    let kind = tally.kind(labels).to_owned();
    let dependency = tally.dependency(labels).to_owned();
    let class = |c: Option<oprec_core::FailureClass>| c.map_or(NONE, |c| c.as_str());
    match series {
        Series::Claims => counter!(names::CLAIMS, "kind" => kind, "dependency" => dependency),
        Series::Succeeded => {
            counter!(names::ATTEMPTS_SUCCEEDED, "kind" => kind, "dependency" => dependency)
        }
        Series::Failed(c) => counter!(names::ATTEMPTS_FAILED,
            "kind" => kind, "class" => class(c), "dependency" => dependency),
        Series::Completion(outcome) => {
            // The dependency too: each (kind, dependency) is a count of its own, and two of
            // them reported to one series would keep only the larger.
            counter!(names::COMPLETIONS,
                "kind" => kind, "outcome" => outcome.as_str(), "dependency" => dependency)
        }
        Series::Dead(c, reason) => counter!(names::DEAD_PROMOTIONS,
            "kind" => kind, "class" => class(c), "dependency" => dependency,
            "reason" => reason.as_str()),
    }
}

/// Refreshes the counters until `stop` (and once more at the end).
pub(crate) async fn counters(stats: Arc<Stats>, tally: Arc<Tally>, stop: CancellationToken) {
    let mut labelled = Registered::default();
    loop {
        record_counters(&stats.snapshot());
        labelled.record(&tally);
        tokio::select! {
            _ = stop.cancelled() => break,
            _ = tokio::time::sleep(COUNTERS_EVERY) => {}
        }
    }
    record_counters(&stats.snapshot());
    labelled.record(&tally);
}

/// Labelled gauges remember their label values, so a value that disappears (no more dead
/// operations of a kind) drops to zero instead of repeating its last figure.
#[derive(Default)]
struct Labelled {
    seen: HashMap<&'static str, BTreeSet<String>>,
}

impl Labelled {
    fn set(&mut self, name: &'static str, label: &'static str, values: BTreeMap<String, u64>) {
        let now: BTreeSet<String> = values.keys().cloned().collect();
        let before = self.seen.insert(name, now).unwrap_or_default();
        for gone in before.iter().filter(|k| !values.contains_key(*k)) {
            gauge!(name, label => gone.clone()).set(0.0);
        }
        for (value, n) in values {
            gauge!(name, label => value).set(n as f64);
        }
    }
}

fn named<K: ToString>(m: &BTreeMap<K, u64>) -> BTreeMap<String, u64> {
    m.iter().map(|(k, v)| (k.to_string(), *v)).collect()
}

/// Sets the gauges from one stats report.
fn record_figures(labelled: &mut Labelled, r: &StatsReport) {
    labelled.set(names::OPERATIONS, "status", named(&r.by_status));
    let pending = r
        .pending_by_class
        .iter()
        .map(|(c, n)| (c.map_or(NO_CLASS, |c| c.as_str()).to_owned(), *n))
        .collect();
    labelled.set(names::PENDING, "class", pending);
    labelled.set(names::DEAD, "kind", r.dead_by_kind.clone());
    labelled.set(
        names::DEAD_REDRIVEN,
        "kind",
        r.dead_redriven_by_kind.clone(),
    );
    labelled.set(
        names::DEAD_LAST_HOUR,
        "kind",
        r.dead_last_hour_by_kind.clone(),
    );
    labelled.set(
        names::DEAD_LAST_DAY,
        "kind",
        r.dead_last_day_by_kind.clone(),
    );
    labelled.set(
        names::DEAD_LAST_DAY_BY_CODE_VERSION,
        "code_version",
        r.dead_last_day_by_code_version.clone(),
    );
    labelled.set(
        names::ATTEMPTS_LAST_HOUR,
        "dependency",
        r.attempts_last_hour_by_dependency.clone(),
    );
    labelled.set(names::BACKLOG, "age", named(&r.backlog_by_age));
    let unhandled = r
        .unhandled
        .iter()
        .map(|u| (u.kind.clone(), u.pending))
        .collect();
    labelled.set(names::UNHANDLED, "kind", unhandled);
    gauge!(names::RECONCILING).set(r.reconciling as f64);
    if let Some(a) = r.attempts_per_success {
        gauge!(names::ATTEMPTS_PER_SUCCESS).set(a);
    }
    gauge!(names::BACKLOG_AGE).set(r.backlog_age_seconds.unwrap_or(0) as f64);
    let overdue = match (&r.oldest_eligible, r.at) {
        (Some(o), Some(at)) => (at - o.next_eligible_at).num_milliseconds().max(0) as f64 / 1000.0,
        _ => 0.0,
    };
    gauge!(names::OLDEST_ELIGIBLE_OVERDUE).set(overdue);
    // One series per control in force: a handful, set and lifted by operators.
    let control = |h: &oprec_core::HeldBack| format!("{}:{}", h.scope, h.value);
    let held = r
        .held_back
        .iter()
        .map(|h| (control(h), h.eligible))
        .collect();
    labelled.set(names::HELD_BACK, "control", held);
    let held_overdue = r
        .held_back
        .iter()
        .map(|h| {
            let secs = match (&h.oldest, r.at) {
                (Some(o), Some(at)) => (at - o.next_eligible_at).num_seconds().max(0) as u64,
                _ => 0,
            };
            (control(h), secs)
        })
        .collect();
    labelled.set(names::HELD_BACK_OVERDUE, "control", held_overdue);
}

/// Refreshes the figures' gauges every `every` until `stop`; a store error is logged and counted,
/// and the next refresh tries again.
pub(crate) async fn figures(
    store: Arc<dyn OperatorStore>,
    every: Duration,
    stop: CancellationToken,
) {
    let mut labelled = Labelled::default();
    loop {
        match store.stats().await {
            Ok(report) => record_figures(&mut labelled, &report),
            Err(e) => {
                tracing::warn!(error = %e, "reading the figures for metrics failed");
                counter!(names::REFRESH_ERRORS).increment(1);
            }
        }
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(every) => {}
        }
    }
}
