//! The operation record as stored: one row of `operations` ([`Operation`]), one row of
//! `operation_attempts` ([`Attempt`]), and the two together ([`OperationDetail`]).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::status::named_enum;
use crate::{
    AttemptOutcome, FailureClass, OperationError, OperationId, Status, TerminalReason, TraceParent,
};

named_enum! {
    /// Whether a re-drive replays the enqueue-time snapshot or acts on today's data: the kind
    /// declares it, the operation keeps it from its enqueue, and a re-drive's dry run shows it.
    PayloadMode, "payload mode" {
        /// The payload is a full snapshot of the input, taken at enqueue.
        Snapshot => "snapshot",
        /// The payload references current state that the handler reads at run time.
        Reference => "reference",
    }
}

/// One business operation: a row of the `operations` table.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Operation {
    /// UUID v7, generated at enqueue.
    pub id: OperationId,
    /// Selects the handler and the policy.
    pub kind: String,
    /// Unique per kind when present: enqueueing it again returns this operation.
    pub idempotency_key: Option<String>,
    /// Immutable JSON snapshot (or input reference) taken at enqueue.
    pub payload: Value,
    /// Whether the payload is a snapshot or a reference, as the kind declared at enqueue
    /// (`None` for operations enqueued before oprec kept it).
    pub payload_mode: Option<PayloadMode>,
    /// Where the operation stands.
    pub status: Status,
    /// Attempts so far, counted at claim.
    pub attempt: u32,
    /// The attempt bound, if the kind has one.
    pub max_attempts: Option<u32>,
    /// Not claimable before this time.
    pub next_eligible_at: DateTime<Utc>,
    /// No attempt is scheduled after this time.
    pub give_up_at: Option<DateTime<Utc>>,
    /// The current claim's lease end.
    pub lease_until: Option<DateTime<Utc>>,
    /// The current claim's fencing token.
    pub claim_token: Option<uuid::Uuid>,
    /// When the current claim began.
    pub claimed_at: Option<DateTime<Utc>>,
    /// Which worker holds the current claim.
    pub worker_id: Option<String>,
    /// The class of the last failure.
    pub last_failure_class: Option<FailureClass>,
    /// The last structured error.
    pub last_error: Option<OperationError>,
    /// The remote identity of the effect, once known.
    pub remote_id: Option<String>,
    /// The named dependency the kind calls.
    pub dependency: Option<String>,
    /// Why the operation ended dead or cancelled.
    pub terminal_reason: Option<TerminalReason>,
    /// The code version that made the last attempt.
    pub code_version: Option<String>,
    /// The original enqueue options, for diagnosis and re-drive.
    pub enqueue_params: Value,
    /// The operation this one re-drives, if any.
    pub redrive_of: Option<OperationId>,
    /// The first operation of this one's re-drive lineage (`None` if it was never re-driven as
    /// new): the effect key of every copy is taken from it, so a copy of a copy keeps the
    /// original's key.
    #[serde(default)]
    pub redrive_root: Option<OperationId>,
    /// The copy that re-drives this operation as new, once one exists (the store marks the
    /// original as the copy is inserted). A dead operation with one is no longer dead awaiting
    /// action: its copy carries the work on, and counts of dead work leave it out.
    #[serde(default)]
    pub redriven_as: Option<OperationId>,
    /// The producer's W3C trace context, given at enqueue (or taken from its current span):
    /// every attempt's span links to it, so one trace shows the request and all its attempts.
    /// Left out of the JSON when absent, so that archive lines written before it existed hash
    /// (and verify) as they did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traceparent: Option<TraceParent>,
    /// How many times this operation was re-driven.
    pub redrive_count: u32,
    /// Isolated attempts in a row that vanished (lease expired, no outcome): the crash-loop
    /// counter. A vanished attempt that ran beside others makes the operation a suspect instead.
    pub vanished_streak: u32,
    /// A suspect: an attempt vanished (its worker died or stalled with it in flight), so its next
    /// attempt runs isolated, alone in its worker, to tell a culprit from an innocent neighbour.
    #[serde(default)]
    pub suspect: bool,
    /// The current (or last) claim runs alone in its worker: a suspect's isolated attempt.
    #[serde(default)]
    pub isolated: bool,
    /// Backpressure snoozes taken (each refunds its attempt); bounded by the policy's snooze
    /// budget, after which backpressure climbs the ordinary ladder.
    #[serde(default)]
    pub snoozes: u32,
    /// Unknown outcomes retried automatically (a kind whose remote side honours the effect key);
    /// bounded by the policy's unknown-outcome budget, after which they reconcile.
    #[serde(default)]
    pub unknowns: u32,
    /// When a wake-up was last published.
    pub last_woken_at: Option<DateTime<Utc>>,
    /// Enqueue time; backlog age is measured from here.
    pub created_at: DateTime<Utc>,
    /// Last change.
    pub updated_at: DateTime<Utc>,
    /// When the operation reached a terminal status.
    pub terminal_at: Option<DateTime<Utc>>,
}

impl Operation {
    /// The operation whose id names the effect: the first of the re-drive lineage, so every copy
    /// down a lineage hands the remote side the same effect key as the original did.
    pub fn effect_root(&self) -> OperationId {
        self.redrive_root.or(self.redrive_of).unwrap_or(self.id)
    }

    /// Dead and not re-driven as new: work someone still has to act on.
    pub fn is_dead_awaiting_action(&self) -> bool {
        self.status == Status::Dead && self.redriven_as.is_none()
    }

    /// The idempotency key handlers hand the remote side: the same on every attempt and on every
    /// re-driven copy.
    pub fn effect_key(&self) -> String {
        format!("oprec-{}", self.effect_root())
    }
}

/// One claim of an operation, as kept in `operation_attempts`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Attempt {
    /// The attempt number (1-based).
    pub attempt: u32,
    /// When the claim began.
    pub claimed_at: DateTime<Utc>,
    /// When it ended (outcome written, lease found expired, released).
    pub ended_at: DateTime<Utc>,
    /// How it ended.
    pub outcome: AttemptOutcome,
    /// The failure class, for failed attempts.
    pub failure_class: Option<FailureClass>,
    /// The error, for failed or vanished attempts.
    pub error: Option<OperationError>,
    /// The worker that held the claim.
    pub worker_id: Option<String>,
    /// The code version that ran it: the application's, as its worker was configured.
    pub code_version: Option<String>,
    /// The attempt ran isolated: a suspect, alone in its worker.
    #[serde(default)]
    pub isolated: bool,
    /// A completion that arrived after the claim was taken over (refused by the fence, so it
    /// changed nothing): the outcome it brought.
    #[serde(default)]
    pub stale_outcome: Option<AttemptOutcome>,
    /// When that stale completion arrived.
    #[serde(default)]
    pub stale_at: Option<DateTime<Utc>>,
}

/// An operation with its whole attempt history, oldest first.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OperationDetail {
    /// The record.
    pub operation: Operation,
    /// Every attempt, oldest first.
    pub attempts: Vec<Attempt>,
}
