//! What becomes of an unknown outcome once someone finds out: a reconcile hook or an operator
//! states a [`Resolution`], and core decides from the operation's row what the store writes (a
//! [`Settlement`]): applied is succeeded, not applied is pending again (or dead when its attempts
//! are spent), still unknown is looked at again later.

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::policy::attempts_exhausted;
use crate::{Operation, OperationError, Status, TerminalReason};

/// What became of an unknown outcome.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "resolution")]
pub enum Resolution {
    /// The effect happened: succeeded, with its remote id when known.
    Applied {
        /// The remote identity.
        remote_id: Option<String>,
    },
    /// The effect did not happen: pending again, eligible now, safe to retry.
    NotApplied,
    /// Still unknown: look again at `retry_at`.
    StillUnknown {
        /// The next reconcile time.
        retry_at: DateTime<Utc>,
    },
}

/// A reconciling operation's new state, decided by [`Resolution::settle`] and written by the
/// store as it stands (fenced by the operation still being reconciling).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Settlement {
    /// The new status: succeeded, pending, dead or reconciling.
    pub status: Status,
    /// Why, when dead.
    pub terminal_reason: Option<TerminalReason>,
    /// When it may run (pending) or be looked at again (reconciling).
    pub next_eligible_at: DateTime<Utc>,
    /// The effect's remote identity; `None` keeps the stored one.
    pub remote_id: Option<String>,
    /// The new last error: the unknown outcome's, with the decision saying who found what.
    pub last_error: OperationError,
}

impl Resolution {
    /// Decides what `op` (reconciling) becomes, resolved by `actor` at `now`.
    pub fn settle(&self, op: &Operation, actor: &str, now: DateTime<Utc>) -> Settlement {
        let spent = attempts_exhausted(op.attempt, op.max_attempts);
        let (status, terminal_reason, next_eligible_at, remote_id, found) = match self {
            Resolution::Applied { remote_id } => (
                Status::Succeeded,
                None,
                now,
                remote_id.clone(),
                "the effect was applied",
            ),
            Resolution::NotApplied if spent => (
                Status::Dead,
                Some(TerminalReason::AttemptsExhausted),
                now,
                None,
                "the effect was not applied, and the attempts are used up",
            ),
            Resolution::NotApplied => (
                Status::Pending,
                None,
                now,
                None,
                "the effect was not applied; safe to retry",
            ),
            Resolution::StillUnknown { retry_at } => {
                (Status::Reconciling, None, *retry_at, None, "still unknown")
            }
        };
        let mut last_error = op
            .last_error
            .clone()
            .unwrap_or_else(|| OperationError::new("the outcome of an attempt was unknown"));
        last_error.decision = Some(format!("reconciled by {actor}: {found}"));
        Settlement {
            status,
            terminal_reason,
            next_eligible_at,
            remote_id,
            last_error,
        }
    }
}
