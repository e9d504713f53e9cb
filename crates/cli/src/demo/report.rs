//! What `oprec demo` prints: per scenario, each attempt's virtual time, outcome, class and error,
//! then the end state with its reason and next action; or the same as JSON.

use chrono::{DateTime, Utc};
use oprec::{
    AttemptOutcome, FailureClass, OperationDetail, OperationError, OperationId, Status,
    TerminalReason,
};
use serde::Serialize;

use super::scenarios::{Expected, Scenario};
use crate::duration::offset;

/// The whole demo, as `--json` prints it.
#[derive(Debug, Serialize)]
pub(crate) struct DemoReport {
    /// The store (password masked).
    pub database: String,
    /// The transport.
    pub transport: &'static str,
    /// Where the virtual clock started.
    pub virtual_start: DateTime<Utc>,
    /// The ladder, in seconds before each attempt.
    pub ladder_s: Vec<i64>,
    /// The lease of one attempt, in seconds.
    pub lease_s: i64,
    /// Every scenario.
    pub scenarios: Vec<ScenarioReport>,
    /// How far the virtual clock moved.
    pub virtual_elapsed_s: i64,
    /// How long it took.
    pub real_elapsed_ms: u64,
}

/// One attempt, timed from the demo's start.
#[derive(Debug, Serialize)]
pub(crate) struct AttemptReport {
    /// The attempt number.
    pub attempt: u32,
    /// Claimed this many virtual seconds after the start.
    pub at_s: i64,
    /// The same, as `+6m00s`.
    pub offset: String,
    /// How it ended.
    pub outcome: AttemptOutcome,
    /// The failure class, for failed attempts.
    pub class: Option<FailureClass>,
    /// The error, for failed or vanished attempts.
    pub error: Option<OperationError>,
}

/// One scenario's story.
#[derive(Debug, Serialize)]
pub(crate) struct ScenarioReport {
    /// The scenario's short name.
    pub name: &'static str,
    /// What it shows.
    pub title: &'static str,
    /// The operation.
    pub id: OperationId,
    /// Its attempts, oldest first.
    pub attempts: Vec<AttemptReport>,
    /// Where it rests.
    pub status: Status,
    /// Why it is dead, if it is.
    pub terminal_reason: Option<TerminalReason>,
    /// The provider's identity of the effect, once known.
    pub remote_id: Option<String>,
    /// The idempotency key the handler gave the provider (stable across attempts).
    pub effect_key: Option<String>,
    /// The last error (with its decision and next action).
    pub last_error: Option<OperationError>,
    /// What the scenario says must happen.
    pub expected: Expected,
    /// Whether it did.
    pub as_expected: bool,
}

impl ScenarioReport {
    /// The report of `scenario`, whose operation is now `detail`.
    pub(crate) fn new(
        scenario: &Scenario,
        detail: OperationDetail,
        effect_key: Option<String>,
        start: DateTime<Utc>,
    ) -> Self {
        let attempts: Vec<AttemptReport> = detail
            .attempts
            .into_iter()
            .map(|a| {
                let at_s = (a.claimed_at - start).num_seconds();
                AttemptReport {
                    attempt: a.attempt,
                    at_s,
                    offset: offset(at_s),
                    outcome: a.outcome,
                    class: a.failure_class,
                    error: a.error,
                }
            })
            .collect();
        let o = detail.operation;
        let got = Expected {
            status: o.status,
            terminal_reason: o.terminal_reason,
            attempts_at_s: attempts.iter().map(|a| a.at_s).collect(),
        };
        ScenarioReport {
            name: scenario.name,
            title: scenario.title,
            id: o.id,
            as_expected: got == scenario.expected,
            attempts,
            status: o.status,
            terminal_reason: o.terminal_reason,
            remote_id: o.remote_id,
            effect_key,
            last_error: o.last_error,
            expected: scenario.expected.clone(),
        }
    }

    /// The scenario as text: a title, a line per attempt, the end state.
    pub(crate) fn render(&self) -> String {
        let mut out = format!("\n{}\n", self.title);
        for a in &self.attempts {
            let what = match (&a.class, &a.error) {
                (Some(class), Some(e)) => format!("{} ({class}): {e}", a.outcome),
                (None, Some(e)) => format!("{}: {}", a.outcome, e.summary),
                _ => a.outcome.to_string(),
            };
            out.push_str(&format!(
                "  attempt {}  at {:>8}  {what}\n",
                a.attempt, a.offset
            ));
        }
        let mut end = format!("  => {}", self.status);
        if let Some(r) = self.terminal_reason {
            end += &format!(" ({r})");
        }
        if let Some(r) = &self.remote_id {
            end += &format!(", remote id {r}");
            if let Some(k) = &self.effect_key {
                end += &format!(" (the provider deduplicates on effect key {k})");
            }
        }
        if self.status != Status::Succeeded
            && let Some(next) = self
                .last_error
                .as_ref()
                .and_then(|e| e.next_action.as_ref())
        {
            end += &format!("; next action: {next}");
        }
        if !self.as_expected {
            end += &format!(
                "\n  !! expected {} {:?} with attempts at {:?} s",
                self.expected.status, self.expected.terminal_reason, self.expected.attempts_at_s
            );
        }
        out.push_str(&end);
        out.push('\n');
        out
    }
}
