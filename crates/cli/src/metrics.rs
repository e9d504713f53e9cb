//! `oprec worker --metrics-listen ADDR`: Prometheus metrics over HTTP. Every few seconds the
//! store's figures (what `oprec stats` shows) become gauges and the worker's counters (claims,
//! stale claims, wake-ups ignored, garbage frames...) become counters; the runtime's handler
//! latency histogram (`oprec_handler_duration_seconds`) is recorded as it happens.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use metrics::{counter, describe_counter, describe_gauge, describe_histogram, gauge};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder};
use oprec::OperatorStore;
use oprec::operator::StatsReport;
use oprec::runtime::{Stats, StatsSnapshot};
use tokio_util::sync::CancellationToken;

use crate::exit::BadInput;

/// How often the store's figures are read.
pub(crate) const EVERY: Duration = Duration::from_secs(5);

/// The handler latency buckets, in seconds: from a local write to a slow remote call.
const LATENCY_BUCKETS: [f64; 14] = [
    0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
];

/// Parses `--metrics-listen` (`127.0.0.1:9464`, `[::]:9464`).
pub(crate) fn address(text: &str) -> Result<SocketAddr, BadInput> {
    text.trim().parse().map_err(|_| {
        BadInput(format!(
            "--metrics-listen {:?} is not an address to listen on; write it like 127.0.0.1:9464 \
             or 0.0.0.0:9464",
            crate::output::cut(text, 64)
        ))
    })
}

/// Installs the Prometheus recorder and starts its HTTP listener on `addr` (any path answers).
pub(crate) fn install(addr: SocketAddr) -> anyhow::Result<()> {
    PrometheusBuilder::new()
        .with_http_listener(addr)
        .set_buckets_for_metric(
            Matcher::Full("oprec_handler_duration_seconds".into()),
            &LATENCY_BUCKETS,
        )?
        .install()
        .map_err(|e| anyhow::anyhow!("cannot serve metrics on {addr}: {e}"))?;
    describe();
    Ok(())
}

/// Help texts, shown in the exposition.
fn describe() {
    describe_histogram!(
        "oprec_handler_duration_seconds",
        metrics::Unit::Seconds,
        "How long handlers ran, per kind."
    );
    for (name, help) in GAUGES {
        describe_gauge!(*name, *help);
    }
    for (name, help, _) in COUNTERS {
        describe_counter!(*name, *help);
    }
}

/// The gauges taken from the store's figures.
const GAUGES: &[(&str, &str)] = &[
    ("oprec_operations", "Operations by status."),
    (
        "oprec_pending_operations",
        "Pending operations by last failure class (none: not failed yet).",
    ),
    (
        "oprec_attempts_per_success",
        "Attempts recorded per succeeded operation (1 is perfect).",
    ),
    (
        "oprec_oldest_eligible_overdue_seconds",
        "How long the most overdue eligible pending operation has waited past its time.",
    ),
    ("oprec_dead_operations", "Dead operations per kind."),
    (
        "oprec_dead_last_hour",
        "Operations promoted to dead in the last hour, per kind.",
    ),
    (
        "oprec_dead_last_day",
        "Operations promoted to dead in the last day, per kind.",
    ),
    (
        "oprec_dead_last_day_by_code_version",
        "Operations promoted to dead in the last day, per code version of their last attempt.",
    ),
    (
        "oprec_reconciling_operations",
        "Unknown outcomes awaiting reconciliation.",
    ),
    (
        "oprec_attempts_last_hour",
        "Attempts that ended in the last hour, per dependency.",
    ),
    (
        "oprec_backlog_age_seconds",
        "Age of the oldest unfinished operation, by its creation time.",
    ),
    (
        "oprec_backlog_operations",
        "Unfinished operations by age of their creation time.",
    ),
    (
        "oprec_unhandled_operations",
        "Pending operations of a kind no live worker handles, per kind.",
    ),
];

/// The worker's counters: name, help, and where the value comes from.
type Pick = fn(&StatsSnapshot) -> u64;
const COUNTERS: &[(&str, &str, Pick)] = &[
    ("oprec_claims_total", "Operations claimed.", |s| s.claimed),
    (
        "oprec_attempts_succeeded_total",
        "Attempts that succeeded.",
        |s| s.succeeded,
    ),
    (
        "oprec_attempts_failed_total",
        "Attempts that failed (any class).",
        |s| s.failed,
    ),
    ("oprec_completions_total", "Outcomes written.", |s| {
        s.completions
    }),
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
        "oprec_obsolete_total",
        "Operations cancelled as no longer needed.",
        |s| s.obsolete,
    ),
];

/// Labelled gauges remember their label values, so a value that disappears (no more dead
/// operations of a kind) drops to zero instead of repeating its last figure.
#[derive(Default)]
struct Labelled {
    seen: HashMap<&'static str, BTreeSet<String>>,
}

impl Labelled {
    fn set(&mut self, name: &'static str, label: &'static str, values: &BTreeMap<String, u64>) {
        let now: BTreeSet<String> = values.keys().cloned().collect();
        let before = self.seen.insert(name, now).unwrap_or_default();
        for gone in before.iter().filter(|k| !values.contains_key(*k)) {
            gauge!(name, label => gone.clone()).set(0.0);
        }
        for (value, n) in values {
            gauge!(name, label => value.clone()).set(*n as f64);
        }
    }
}

/// Sets the gauges from one stats report.
fn record_figures(labelled: &mut Labelled, r: &StatsReport) {
    labelled.set("oprec_operations", "status", &r.by_status);
    labelled.set("oprec_pending_operations", "class", &r.pending_by_class);
    labelled.set("oprec_dead_operations", "kind", &r.dead_by_kind);
    labelled.set("oprec_dead_last_hour", "kind", &r.dead_last_hour_by_kind);
    labelled.set("oprec_dead_last_day", "kind", &r.dead_last_day_by_kind);
    labelled.set(
        "oprec_dead_last_day_by_code_version",
        "code_version",
        &r.dead_last_day_by_code_version,
    );
    labelled.set(
        "oprec_attempts_last_hour",
        "dependency",
        &r.attempts_last_hour_by_dependency,
    );
    labelled.set("oprec_backlog_operations", "age", &r.backlog_by_age);
    let unhandled: BTreeMap<String, u64> = r
        .unhandled
        .iter()
        .map(|u| (u.kind.clone(), u.pending))
        .collect();
    labelled.set("oprec_unhandled_operations", "kind", &unhandled);
    gauge!("oprec_reconciling_operations").set(r.reconciling as f64);
    if let Some(a) = r.attempts_per_success {
        gauge!("oprec_attempts_per_success").set(a);
    }
    gauge!("oprec_backlog_age_seconds").set(r.backlog_age_seconds.unwrap_or(0) as f64);
    let overdue = match (&r.oldest_eligible, r.at) {
        (Some(o), Some(at)) => (at - o.next_eligible_at).num_milliseconds().max(0) as f64 / 1000.0,
        _ => 0.0,
    };
    gauge!("oprec_oldest_eligible_overdue_seconds").set(overdue);
}

/// Sets the counters from the worker's live counters.
fn record_counters(s: &StatsSnapshot) {
    for (name, _, pick) in COUNTERS {
        counter!(*name).absolute(pick(s));
    }
}

/// Refreshes the metrics every [`EVERY`] until `stop`; a store error is logged and counted, and
/// the next refresh tries again.
pub(crate) async fn publish(
    store: Arc<dyn OperatorStore>,
    stats: Arc<Stats>,
    stop: CancellationToken,
) {
    let mut labelled = Labelled::default();
    loop {
        record_counters(&stats.snapshot());
        match store.stats().await {
            Ok(report) => record_figures(&mut labelled, &report),
            Err(e) => {
                tracing::warn!(error = %e, "reading the figures for metrics failed");
                counter!("oprec_metrics_refresh_errors_total").increment(1);
            }
        }
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(EVERY) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_are_checked() {
        assert_eq!(address("127.0.0.1:9464").unwrap().port(), 9464);
        assert!(address("[::1]:9464").is_ok());
        assert!(address("localhost").is_err());
        assert!(address("127.0.0.1:99999").is_err());
    }
}
