//! What went wrong in an attempt, classified: the failure classes (each with its own next
//! action) and the structured error an operator reads instead of a log.

use std::fmt;

use chrono::Duration;
use serde::{Deserialize, Serialize};

use crate::status::named_enum;

named_enum! {
    /// What kind of failure an attempt met; each class has its own next action.
    FailureClass, "failure class" {
        /// A second attempt has a genuinely different chance: connection refused, 503, timeout
        /// before any write. Next rung of the ladder.
        Transient => "transient",
        /// The dependency said "not now" and maybe when (429 + Retry-After). Defer to that time,
        /// capped by a local maximum.
        RateLimited => "rate_limited",
        /// Our own capacity is exhausted (local pool). Snooze briefly; the attempt is refunded.
        Backpressure => "backpressure",
        /// The input cannot succeed later: malformed payload, missing entity. Dead at once.
        Permanent => "permanent",
        /// Configuration is wrong (rejected credentials). Held until the owner repairs it.
        Configuration => "configuration",
        /// The effect may have happened (timeout after the write). Reconcile, never retry blindly.
        Unknown => "unknown",
    }
}

/// The structured error kept in `last_error` and in each attempt's history: enough for an operator
/// to act without reading logs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OperationError {
    /// One line saying what went wrong.
    pub summary: String,
    /// The input field at fault, when there is one ("destination postal code").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    /// What was decided ("permanent failure", "retry at 12:05").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision: Option<String>,
    /// What a person or process should do next ("correct the source data and submit a new
    /// operation").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_action: Option<String>,
    /// The dependency the failure is about, when it is not (only) the kind's own: a validation
    /// failure caused by an incomplete catalogue belongs to the catalogue. Kept in `last_error`,
    /// so that pausing or postponing that dependency holds the operation back too (see
    /// [`ControlScope::Dependency`](crate::ControlScope::Dependency)).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dependency: Option<String>,
}

/// Serializes a kept error summary as `last_error` is everywhere in JSON (an
/// [`OperationError`] with only its summary), so that a script reads one shape from every listing.
pub(crate) fn summary_as_error<S: serde::Serializer>(
    summary: &Option<String>,
    s: S,
) -> Result<S::Ok, S::Error> {
    summary
        .as_ref()
        .map(|summary| OperationError::new(summary.clone()))
        .serialize(s)
}

impl OperationError {
    /// An error with just a summary.
    pub fn new(summary: impl Into<String>) -> Self {
        OperationError {
            summary: summary.into(),
            field: None,
            decision: None,
            next_action: None,
            dependency: None,
        }
    }

    /// Names the input field at fault.
    pub fn field(mut self, field: impl Into<String>) -> Self {
        self.field = Some(field.into());
        self
    }

    /// States the decision taken.
    pub fn decision(mut self, decision: impl Into<String>) -> Self {
        self.decision = Some(decision.into());
        self
    }

    /// States what should happen next.
    pub fn next_action(mut self, next_action: impl Into<String>) -> Self {
        self.next_action = Some(next_action.into());
        self
    }

    /// Names the dependency the failure is about (see [`OperationError::dependency`]).
    pub fn dependency(mut self, dependency: impl Into<String>) -> Self {
        self.dependency = Some(dependency.into());
        self
    }
}

impl fmt::Display for OperationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.summary)?;
        if let Some(field) = &self.field {
            write!(f, " (field: {field})")?;
        }
        if let Some(dependency) = &self.dependency {
            write!(f, " (dependency: {dependency})")?;
        }
        Ok(())
    }
}

/// A classified failure of one attempt, as a handler returns it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failure {
    /// The class, which decides the next action.
    pub class: FailureClass,
    /// What went wrong.
    pub error: OperationError,
    /// For rate-limited failures: the dependency's declared wait (Retry-After).
    pub retry_after: Option<Duration>,
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.class, self.error)
    }
}

/// A `Failure` is an error, so a handler can return it through `?` and `anyhow`, and the runtime
/// can find it again by downcasting.
impl std::error::Error for Failure {}

impl Failure {
    /// A failure of `class`.
    pub fn new(class: FailureClass, error: OperationError) -> Self {
        Failure {
            class,
            error,
            retry_after: None,
        }
    }

    /// A transient failure.
    pub fn transient(summary: impl Into<String>) -> Self {
        Self::new(FailureClass::Transient, OperationError::new(summary))
    }

    /// A rate-limited failure, with the dependency's declared wait if it gave one.
    pub fn rate_limited(summary: impl Into<String>, retry_after: Option<Duration>) -> Self {
        Failure {
            retry_after,
            ..Self::new(FailureClass::RateLimited, OperationError::new(summary))
        }
    }

    /// A permanent failure naming the field at fault.
    pub fn permanent(error: OperationError) -> Self {
        Self::new(FailureClass::Permanent, error)
    }

    /// Names the dependency this failure is about, when it is not (only) the kind's own, so that
    /// pausing or postponing that dependency holds the operation back while it waits to retry:
    /// `Failure::transient("catalogue incomplete").about_dependency("catalogue")`.
    pub fn about_dependency(mut self, dependency: impl Into<String>) -> Self {
        self.error.dependency = Some(dependency.into());
        self
    }

    /// A configuration failure.
    pub fn configuration(summary: impl Into<String>) -> Self {
        Self::new(FailureClass::Configuration, OperationError::new(summary))
    }

    /// An unknown outcome.
    pub fn unknown(summary: impl Into<String>) -> Self {
        Self::new(FailureClass::Unknown, OperationError::new(summary))
    }

    /// Local backpressure.
    pub fn backpressure(summary: impl Into<String>) -> Self {
        Self::new(FailureClass::Backpressure, OperationError::new(summary))
    }
}
