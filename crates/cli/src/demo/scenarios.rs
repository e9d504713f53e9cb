//! The retry scenarios of `oprec demo` (malformed input, transient and long outages, an unknown
//! remote result, a deadline before the next rung, a crash loop): what each enqueues, and how it
//! must end.

use chrono::{DateTime, Duration, Utc};
use oprec::{EnqueueOptions, Status, TerminalReason};
use serde::Serialize;
use serde_json::{Value, json};

use super::provider::{LADDER, LEASE_SECS, Script};

/// How a scenario must end.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub(crate) struct Expected {
    /// The resting status.
    pub status: Status,
    /// The terminal reason, for dead operations.
    pub terminal_reason: Option<TerminalReason>,
    /// When each attempt was claimed, in seconds after the start.
    pub attempts_at_s: Vec<i64>,
}

/// One scenario.
#[derive(Clone, Debug)]
pub(crate) struct Scenario {
    /// A short name, for tools.
    pub name: &'static str,
    /// What it shows.
    pub title: &'static str,
    /// The payload enqueued.
    pub payload: Value,
    /// The caller's deadline, after the start.
    pub deadline_after: Option<Duration>,
    /// How it must end.
    pub expected: Expected,
}

impl Scenario {
    /// The enqueue options at virtual time `start`.
    pub(crate) fn options(&self, start: DateTime<Utc>) -> EnqueueOptions {
        EnqueueOptions {
            deadline: self.deadline_after.map(|d| start + d),
            ..EnqueueOptions::default()
        }
    }
}

fn shipment(script: Script) -> Value {
    json!({"postal_code": "10115", "script": script})
}

/// The ladder's attempt times: the running sums of its rungs.
fn ladder_times(n: usize) -> Vec<i64> {
    LADDER
        .iter()
        .take(n)
        .scan(0, |at, d| {
            *at += d;
            Some(*at)
        })
        .collect()
}

fn dead(reason: TerminalReason, attempts_at_s: Vec<i64>) -> Expected {
    Expected {
        status: Status::Dead,
        terminal_reason: Some(reason),
        attempts_at_s,
    }
}

/// Every scenario, in the order printed.
pub(crate) fn all() -> Vec<Scenario> {
    let down = |secs| {
        shipment(Script {
            down_for_s: secs,
            ..Script::default()
        })
    };
    vec![
        Scenario {
            name: "malformed_input",
            title: "malformed input: one attempt, dead (permanent), the error names the field",
            payload: json!({"street": "1 Main St"}),
            deadline_after: None,
            expected: dead(TerminalReason::Permanent, vec![0]),
        },
        Scenario {
            name: "transient_outage",
            title: "transient outage of 200 s: attempts at 0, 60 and 360 s, then success",
            payload: down(200),
            deadline_after: None,
            expected: Expected {
                status: Status::Succeeded,
                terminal_reason: None,
                attempts_at_s: ladder_times(3),
            },
        },
        Scenario {
            name: "long_outage",
            title: "long outage (30 days): six attempts at the ladder's times, then dead",
            payload: down(30 * 86_400),
            deadline_after: None,
            expected: dead(TerminalReason::AttemptsExhausted, ladder_times(6)),
        },
        Scenario {
            name: "unknown_result",
            title: "timeout after the write: reconciling, no blind retry",
            payload: shipment(Script {
                timeout_after_write: true,
                ..Script::default()
            }),
            deadline_after: None,
            expected: Expected {
                status: Status::Reconciling,
                terminal_reason: None,
                attempts_at_s: vec![0],
            },
        },
        Scenario {
            name: "deadline",
            title: "deadline 1,000 s after enqueue, before the 4th rung: dead, no late attempt",
            payload: down(86_400),
            deadline_after: Some(Duration::seconds(1000)),
            expected: dead(TerminalReason::DeadlinePassed, ladder_times(3)),
        },
        Scenario {
            name: "crash_loop",
            title: "a worker that hangs on every attempt (as if crashed): vanished beside others, then 3 times alone, dead (crash_loop)",
            payload: shipment(Script {
                hang: true,
                ..Script::default()
            }),
            deadline_after: None,
            // Each attempt vanishes one second after its lease expires and is claimed again: the
            // first beside the other scenarios, the next three isolated (suspect isolation).
            expected: dead(
                TerminalReason::CrashLoop,
                (0..4).map(|i| i * (LEASE_SECS + 1)).collect(),
            ),
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ladder_times_are_running_sums() {
        assert_eq!(ladder_times(6), vec![0, 60, 360, 1860, 9360, 46860]);
    }
}
