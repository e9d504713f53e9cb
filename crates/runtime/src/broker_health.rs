//! Whether the broker answers. While it does not, the worker claims straight from the store at
//! the poll interval, as a poll-only worker does: every operation is in the database, so an
//! unreachable doorbell slows the fleet to polling instead of stopping it. It asks the broker
//! again once a second, and goes back to wake-ups as soon as it answers.

use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How often a worker that lost its broker asks it again.
pub(crate) const PROBE_EVERY: Duration = Duration::from_secs(1);

/// The broker's state as this worker saw it last.
#[derive(Debug, Default)]
pub(crate) struct BrokerHealth {
    down: Mutex<Option<Down>>,
}

/// An outage in progress.
#[derive(Debug)]
struct Down {
    since: Instant,
    probe_at: Instant,
}

impl BrokerHealth {
    /// Whether the next claim should wait for wake-ups: the broker answered last time, or it did
    /// not and a probe is due (one claim at a time gets the probe; the others poll the store).
    pub(crate) fn ask_broker(&self) -> bool {
        let mut down = self.down.lock().unwrap_or_else(|e| e.into_inner());
        match down.as_mut() {
            None => true,
            Some(d) => {
                let now = Instant::now();
                if now < d.probe_at {
                    return false;
                }
                d.probe_at = now + PROBE_EVERY;
                true
            }
        }
    }

    /// Whether the broker is considered down now.
    #[cfg(test)]
    fn is_down(&self) -> bool {
        self.down
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_some()
    }

    /// Receiving failed: from now on (until it answers again) the worker polls the store. Logs
    /// the first failure of an outage only.
    pub(crate) fn failed(&self, error: &dyn std::fmt::Display, transport: &str) {
        let mut down = self.down.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        match down.as_mut() {
            Some(d) => d.probe_at = d.probe_at.max(now + PROBE_EVERY),
            None => {
                tracing::warn!(%error, transport,
                    "the broker does not answer; claiming from the store at the poll interval until it does");
                *down = Some(Down {
                    since: now,
                    probe_at: now + PROBE_EVERY,
                });
            }
        }
    }

    /// Receiving worked: back to wake-ups. Logs the end of an outage.
    pub(crate) fn answered(&self, transport: &str) {
        let mut down = self.down.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(d) = down.take() {
            tracing::info!(
                transport,
                down_for_ms = d.since.elapsed().as_millis() as u64,
                "the broker answers again; claiming on wake-ups"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_switches_to_polling_until_a_probe_answers() {
        let h = BrokerHealth::default();
        assert!(h.ask_broker(), "a healthy broker is asked");
        h.failed(&"connection refused", "redis");
        assert!(h.is_down());
        assert!(
            !h.ask_broker(),
            "no probe before PROBE_EVERY: poll the store"
        );
        // Make the probe due.
        h.down.lock().unwrap().as_mut().unwrap().probe_at = Instant::now();
        assert!(h.ask_broker(), "a due probe asks the broker");
        assert!(!h.ask_broker(), "one probe at a time: the next claim polls");
        h.answered("redis");
        assert!(!h.is_down());
        assert!(h.ask_broker(), "answered: wake-ups again");
    }
}
