//! When to look for entries that dead consumers left pending, and where the last look stopped.
//!
//! `XAUTOCLAIM` scans the group's pending entries from a cursor. Keeping the cursor between calls
//! spreads one pass over many receives instead of rescanning the head of a long pending list on
//! each; once a pass has gone round, the next starts half a `claim_idle` later, so a busy worker
//! does not pay a round trip per receive for entries that cannot be stale yet. An entry is thus
//! taken over between `claim_idle` and 1.5 × `claim_idle` after its consumer went silent.

use std::time::{Duration, Instant};

/// The cursor that starts a pass, and that `XAUTOCLAIM` returns when a pass is complete.
const START: &str = "0-0";

/// The state of the scan for stale pending entries.
#[derive(Debug)]
pub(crate) struct ReclaimScan {
    cursor: String,
    next_pass: Option<Instant>,
    interval: Duration,
}

impl ReclaimScan {
    /// A scan that is due at once and then every half `claim_idle`.
    pub fn new(claim_idle: Duration) -> Self {
        ReclaimScan {
            cursor: START.to_owned(),
            next_pass: None,
            interval: claim_idle / 2,
        }
    }

    /// The cursor to scan from now, or `None` when the last pass finished too recently.
    pub fn due(&self, now: Instant) -> Option<String> {
        let resting = self.cursor == START && self.next_pass.is_some_and(|at| now < at);
        (!resting).then(|| self.cursor.clone())
    }

    /// Records where a scan stopped; true when that completed a pass.
    pub fn scanned(&mut self, cursor: String, now: Instant) -> bool {
        let complete = cursor == START;
        if complete {
            self.next_pass = Some(now + self.interval);
        }
        self.cursor = cursor;
        complete
    }

    /// Starts over at once (the stream was purged or recreated).
    pub fn restart(&mut self) {
        self.cursor = START.to_owned();
        self.next_pass = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pass_continues_at_once_and_rests_when_complete() {
        let t0 = Instant::now();
        let mut scan = ReclaimScan::new(Duration::from_secs(30));
        assert_eq!(scan.due(t0).as_deref(), Some("0-0"));
        assert!(!scan.scanned("17-3".to_owned(), t0));
        assert_eq!(scan.due(t0).as_deref(), Some("17-3"));
        assert!(scan.scanned("0-0".to_owned(), t0));
        assert_eq!(scan.due(t0 + Duration::from_secs(14)), None);
        assert_eq!(
            scan.due(t0 + Duration::from_secs(15)).as_deref(),
            Some("0-0")
        );
        scan.restart();
        assert_eq!(scan.due(t0).as_deref(), Some("0-0"));
    }
}
