//! Changes that maintenance and operators make to many waiting operations at once, each the same
//! for every row it touches: the deadline pass ends pending and held operations dead, and a
//! quarantine sets pending ones aside as held. Core states the target and the words; a store
//! applies them to the rows it selects, in one statement, with [`ErrorPatch`]'s rule.

use serde::Serialize;

use crate::{OperationError, Status, TerminalReason};

/// How an ending rewrites `last_error`: the summary of the failure that brought the operation
/// here stays (or `default_summary` when there was no error yet), and the decision and next action
/// are replaced. Every other field of the error (the field at fault) stays.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ErrorPatch {
    /// The summary when the operation had no error.
    pub default_summary: String,
    /// The new decision.
    pub decision: String,
    /// The new next action.
    pub next_action: String,
}

impl ErrorPatch {
    /// The error after the patch, from the error before it. Stores apply the same rule in SQL
    /// (PostgreSQL's `||` on jsonb, SQLite's `json_patch`).
    pub fn apply(&self, current: Option<&OperationError>) -> OperationError {
        let mut e = current
            .cloned()
            .unwrap_or_else(|| OperationError::new(self.default_summary.clone()));
        e.decision = Some(self.decision.clone());
        e.next_action = Some(self.next_action.clone());
        e
    }
}

/// The same change for every selected waiting operation: its new status, terminal reason and
/// error patch.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Ending {
    /// The status the operations move to.
    pub status: Status,
    /// Why, when the new status is terminal.
    pub terminal_reason: Option<TerminalReason>,
    /// How `last_error` changes.
    pub patch: ErrorPatch,
}

impl Ending {
    /// A pending or held operation whose deadline (`give_up_at`) passed before its next attempt:
    /// dead, `deadline_passed`.
    pub fn deadline_passed() -> Self {
        Ending {
            status: Status::Dead,
            terminal_reason: Some(TerminalReason::DeadlinePassed),
            patch: ErrorPatch {
                default_summary: "the deadline passed before any attempt".into(),
                decision: "dead: the deadline passed before the next attempt".into(),
                next_action: "re-drive with a later deadline if the result is still useful (oprec redrive --extend-deadline)".into(),
            },
        }
    }

    /// A pending operation an operator set aside: held, saying who and why, until released.
    pub fn quarantined(actor: &str, reason: &str) -> Self {
        Ending {
            status: Status::Held,
            terminal_reason: None,
            patch: ErrorPatch {
                default_summary: "quarantined".into(),
                decision: format!("quarantined by {actor}: {reason}"),
                next_action: "repair the input or the handler, then release it (oprec release)"
                    .into(),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_patch_keeps_the_summary_and_field_and_replaces_the_decision() {
        let before = OperationError::new("503 from the provider")
            .field("amount")
            .decision("retry at 12:00")
            .next_action("none: retried automatically");
        let after = Ending::deadline_passed().patch.apply(Some(&before));
        assert_eq!(after.summary, "503 from the provider");
        assert_eq!(after.field.as_deref(), Some("amount"));
        assert_eq!(
            after.decision.as_deref(),
            Some("dead: the deadline passed before the next attempt")
        );
        let fresh = Ending::quarantined("ops", "bad batch").patch.apply(None);
        assert_eq!(fresh.summary, "quarantined");
        assert_eq!(
            fresh.decision.as_deref(),
            Some("quarantined by ops: bad batch")
        );
    }
}
