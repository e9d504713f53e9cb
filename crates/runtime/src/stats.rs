//! Counters a worker keeps, for logs, tests and (later) Prometheus.

use std::sync::atomic::{AtomicU64, Ordering};

use serde::Serialize;

/// Live counters of one worker process.
#[derive(Debug, Default)]
pub struct Stats {
    pub(crate) claimed: AtomicU64,
    pub(crate) claimed_ahead: AtomicU64,
    pub(crate) succeeded: AtomicU64,
    pub(crate) failed: AtomicU64,
    pub(crate) completions: AtomicU64,
    pub(crate) stale_claims: AtomicU64,
    pub(crate) wakeups_received: AtomicU64,
    pub(crate) wakeups_ignored: AtomicU64,
    pub(crate) garbage_frames: AtomicU64,
    pub(crate) published: AtomicU64,
    pub(crate) publish_errors: AtomicU64,
    pub(crate) vanished: AtomicU64,
    pub(crate) deadline_dead: AtomicU64,
    pub(crate) released: AtomicU64,
    pub(crate) given_back: AtomicU64,
    pub(crate) obsolete: AtomicU64,
    pub(crate) retention_removed: AtomicU64,
    pub(crate) isolated: AtomicU64,
    pub(crate) panicked: AtomicU64,
}

/// A copy of [`Stats`] at one moment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct StatsSnapshot {
    /// Operations claimed.
    pub claimed: u64,
    /// Of those, claimed from the store ahead of a broker's backlog of wake-ups: aged, or above
    /// the default priority (README, "Priorities").
    pub claimed_ahead: u64,
    /// Attempts this worker recorded as succeeded (written, not refused as stale).
    pub succeeded: u64,
    /// Attempts this worker recorded as failed, any class (written, not refused as stale).
    pub failed: u64,
    /// Outcomes written (applied).
    pub completions: u64,
    /// Writes refused because the claim was stale (lease taken over).
    pub stale_claims: u64,
    /// Wake-up deliveries taken off the transport.
    pub wakeups_received: u64,
    /// Wake-ups with no effect: terminal, running, not yet eligible, unknown or paused operations.
    pub wakeups_ignored: u64,
    /// Deliveries that were not wake-up frames (acknowledged and dropped).
    pub garbage_frames: u64,
    /// Wake-ups published by the scheduler or after enqueue.
    pub published: u64,
    /// Publishes that failed (the scheduler re-wakes later).
    pub publish_errors: u64,
    /// Expired leases recorded as vanished attempts.
    pub vanished: u64,
    /// Operations ended because their deadline passed while waiting.
    pub deadline_dead: u64,
    /// Attempts released unfinished on shutdown (written, not refused as stale).
    pub released: u64,
    /// Claims never started, given back on shutdown with their attempts refunded.
    pub given_back: u64,
    /// Operations cancelled as no longer needed.
    pub obsolete: u64,
    /// Finished operations removed by retention (with their attempts and steps).
    pub retention_removed: u64,
    /// Suspects claimed and run isolated, alone in this worker.
    pub isolated: u64,
    /// Handlers that panicked (each recorded at once as an unrecognised error).
    pub panicked: u64,
}

impl Stats {
    pub(crate) fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }

    /// The counters now.
    pub fn snapshot(&self) -> StatsSnapshot {
        let g = |c: &AtomicU64| c.load(Ordering::Relaxed);
        StatsSnapshot {
            claimed: g(&self.claimed),
            claimed_ahead: g(&self.claimed_ahead),
            succeeded: g(&self.succeeded),
            failed: g(&self.failed),
            completions: g(&self.completions),
            stale_claims: g(&self.stale_claims),
            wakeups_received: g(&self.wakeups_received),
            wakeups_ignored: g(&self.wakeups_ignored),
            garbage_frames: g(&self.garbage_frames),
            published: g(&self.published),
            publish_errors: g(&self.publish_errors),
            vanished: g(&self.vanished),
            deadline_dead: g(&self.deadline_dead),
            released: g(&self.released),
            given_back: g(&self.given_back),
            obsolete: g(&self.obsolete),
            retention_removed: g(&self.retention_removed),
            isolated: g(&self.isolated),
            panicked: g(&self.panicked),
        }
    }
}
