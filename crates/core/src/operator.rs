//! What operators do to many operations at once — re-drive, quarantine, release, pause, resolve
//! reconciliations — and what they look at: stats and the audit log. A separate trait from
//! [`Store`] because it is the operator's path, not the worker's; every store implements both.

use std::collections::BTreeMap;

use async_trait::async_trait;
use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};

use crate::status::named_enum;
use crate::{
    FailureClass, Operation, OperationId, Result, Status, Store, TerminalReason, UnhandledKind,
    WorkerBeatParams, WorkerRecord,
};

/// Which operations an operator action touches. Every field narrows; empty lists match all.
/// Every value reaches SQL as a bind parameter.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct OperationFilter {
    /// Only these ids.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ids: Vec<OperationId>,
    /// Only these kinds.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kinds: Vec<String>,
    /// Only these last failure classes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub classes: Vec<FailureClass>,
    /// Only these terminal reasons.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reasons: Vec<TerminalReason>,
    /// Only operations of this dependency.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dependency: Option<String>,
    /// Only operations whose last error summary contains this text (case-insensitive, literal:
    /// no wildcards).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_contains: Option<String>,
    /// Only operations that ended at or after this time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub terminal_since: Option<DateTime<Utc>>,
    /// Only operations that ended before this time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub terminal_until: Option<DateTime<Utc>>,
}

named_enum! {
    /// What a control applies to.
    ControlScope, "control scope" {
        /// Operations of one kind.
        Kind => "kind",
        /// Operations whose last failure has one class.
        FailureClass => "failure_class",
        /// Operations that call one dependency.
        Dependency => "dependency",
    }
}

named_enum! {
    /// What a control does. Both stop claims and wake-ups of the matching operations; nothing else.
    ControlAction, "control action" {
        /// Stopped until resumed (or until `until`).
        Pause => "pause",
        /// Stopped until a stated time.
        Postpone => "postpone",
    }
}

/// A pause or postponement in force (or expired, when listed).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Control {
    /// What it applies to.
    pub scope: ControlScope,
    /// The kind, class or dependency name.
    pub value: String,
    /// Pause or postpone.
    pub action: ControlAction,
    /// When it lapses by itself, if ever.
    pub until: Option<DateTime<Utc>>,
    /// Why.
    pub reason: Option<String>,
    /// Who set it.
    pub actor: String,
    /// When it was set.
    pub created_at: DateTime<Utc>,
}

/// Set (or replace) the control on `scope`/`value`.
#[derive(Clone, Debug)]
pub struct ControlSetParams {
    /// What it applies to.
    pub scope: ControlScope,
    /// The kind, class or dependency name.
    pub value: String,
    /// Pause or postpone.
    pub action: ControlAction,
    /// When it lapses by itself.
    pub until: Option<DateTime<Utc>>,
    /// Why.
    pub reason: Option<String>,
    /// Who.
    pub actor: String,
}

/// How a re-drive brings dead operations back.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "mode")]
pub enum RedriveMode {
    /// The same row: attempts reset to 0, status pending, terminal fields cleared, the deadline
    /// extended (from now) by `extend_deadline` when given.
    InPlace {
        /// New deadline = now + this, when given; otherwise the deadline is cleared only if it
        /// has passed.
        #[serde(skip_serializing_if = "Option::is_none", with = "opt_secs")]
        extend_deadline: Option<Duration>,
    },
    /// A new operation linked by `redrive_of`; the old one stays as it was.
    AsNew {
        /// The new operation's deadline = now + this, when given.
        #[serde(skip_serializing_if = "Option::is_none", with = "opt_secs")]
        deadline: Option<Duration>,
    },
}

mod opt_secs {
    use chrono::Duration;
    use serde::Serializer;
    pub fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => s.serialize_i64(d.num_seconds()),
            None => s.serialize_none(),
        }
    }
}

/// Re-drive one batch of terminal operations matching `filter`, oldest terminal first. Only
/// terminal operations are touched (dead, or cancelled too with `include_cancelled`), so a
/// re-drive never overlaps a late attempt; an operation already re-driven as new is skipped, so
/// running the same re-drive again after an interruption re-drives nothing twice.
#[derive(Clone, Debug)]
pub struct RedriveParams {
    /// Which operations.
    pub filter: OperationFilter,
    /// Also cancelled operations.
    pub include_cancelled: bool,
    /// In place or as new.
    pub mode: RedriveMode,
    /// The most operations in this batch.
    pub limit: u32,
    /// The first re-driven operation's `next_eligible_at`.
    pub start_at: DateTime<Utc>,
    /// The gap between consecutive operations' `next_eligible_at` (zero: all at once).
    pub spacing: Duration,
}

/// One re-driven operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Redriven {
    /// The dead operation.
    pub from: OperationId,
    /// The operation that will run: the same id in place, a new one as new.
    pub to: OperationId,
    /// When it becomes eligible.
    pub next_eligible_at: DateTime<Utc>,
}

/// What a re-drive would touch: the dry run.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct RedrivePreview {
    /// Terminal operations that would be re-driven.
    pub matched: u64,
    /// Of the filter's matches, operations that are not terminal and so are refused.
    pub not_terminal: u64,
    /// Matches grouped by kind, last failure class and terminal reason.
    pub groups: Vec<PreviewGroup>,
    /// A few matches with their last error, for review.
    pub samples: Vec<PreviewSample>,
}

/// One group of a re-drive preview.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PreviewGroup {
    /// The kind.
    pub kind: String,
    /// The last failure class.
    pub class: Option<FailureClass>,
    /// The terminal reason.
    pub reason: Option<TerminalReason>,
    /// How many.
    pub count: u64,
}

/// One sampled match of a re-drive preview.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PreviewSample {
    /// The operation.
    pub id: OperationId,
    /// Its kind.
    pub kind: String,
    /// Its last error summary.
    pub error: Option<String>,
}

/// Move pending operations matching `filter` to held (quarantine), with a reason.
#[derive(Clone, Debug)]
pub struct QuarantineParams {
    /// Which operations (only pending ones are touched).
    pub filter: OperationFilter,
    /// Why; kept in the operation's `last_error.decision`.
    pub reason: String,
    /// Who.
    pub actor: String,
    /// The most operations.
    pub limit: u32,
}

/// Return held operations matching `filter` to pending, eligible now.
#[derive(Clone, Debug)]
pub struct ReleaseParams {
    /// Which operations (only held ones are touched).
    pub filter: OperationFilter,
    /// The most operations.
    pub limit: u32,
}

/// Take reconciling operations whose reconcile time has come, for the kind's reconcile hook.
/// Each one's next reconcile time is pushed to now + `lease` in the same statement, so two
/// reconcilers do not run the same hook at once.
#[derive(Clone, Debug)]
pub struct ReconcileDueParams {
    /// Only these kinds (the ones with a hook here).
    pub kinds: Vec<String>,
    /// The most operations.
    pub limit: u32,
    /// How long the hook has before another reconciler may take the operation.
    pub lease: Duration,
}

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

/// Resolve one reconciling operation.
#[derive(Clone, Debug)]
pub struct ResolveParams {
    /// The operation (must be reconciling).
    pub id: OperationId,
    /// What was found.
    pub resolution: Resolution,
    /// Who decided: a reconcile hook (`reconciler:<worker>`) or an operator.
    pub actor: String,
}

/// The figures that answer "what is failing, why, and is it safe" at a glance — the seed
/// article's list of retry observations.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct StatsReport {
    /// When the figures were taken.
    pub at: Option<DateTime<Utc>>,
    /// Operations by status.
    pub by_status: BTreeMap<String, u64>,
    /// Pending operations by last failure class (`none` when they have not failed).
    pub pending_by_class: BTreeMap<String, u64>,
    /// Attempts recorded per succeeded operation (1.0 is perfect).
    pub attempts_per_success: Option<f64>,
    /// The pending operation that has waited longest past its eligible time, and since when.
    pub oldest_eligible: Option<OldestEligible>,
    /// Dead operations per kind.
    pub dead_by_kind: BTreeMap<String, u64>,
    /// Operations promoted to dead in the last hour, per kind.
    pub dead_last_hour_by_kind: BTreeMap<String, u64>,
    /// Operations promoted to dead in the last day, per kind.
    pub dead_last_day_by_kind: BTreeMap<String, u64>,
    /// Operations promoted to dead in the last day, per code version of their last attempt.
    pub dead_last_day_by_code_version: BTreeMap<String, u64>,
    /// Unknown outcomes awaiting reconciliation.
    pub reconciling: u64,
    /// Attempts that ended in the last hour, per dependency (`none` for kinds without one).
    pub attempts_last_hour_by_dependency: BTreeMap<String, u64>,
    /// Age of the oldest non-terminal operation, by its original creation time.
    pub backlog_age_seconds: Option<i64>,
    /// Non-terminal operations by age bucket of their creation time (<1h, 1h-1d, 1d-7d, >7d).
    pub backlog_by_age: BTreeMap<String, u64>,
    /// Pending operations, per kind, that no live worker handles (see [`OperatorStore::worker_list`]).
    pub unhandled: Vec<UnhandledKind>,
}

/// The pending operation most overdue.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct OldestEligible {
    /// The operation.
    pub id: OperationId,
    /// Its kind.
    pub kind: String,
    /// When it became eligible.
    pub next_eligible_at: DateTime<Utc>,
}

/// What happened in one minute: a point of the dashboard's activity chart.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct ActivityMinute {
    /// The start of the minute.
    pub minute: DateTime<Utc>,
    /// Attempts that ended in it.
    pub attempts: u64,
    /// Of those, attempts that did not succeed (error, rejected, vanished or unknown).
    pub failed: u64,
    /// Operations promoted to dead in it.
    pub dead: u64,
}

/// One operator action, for the audit log.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AuditEntry {
    /// Who.
    pub actor: String,
    /// What ("redrive", "pause", "quarantine", ...).
    pub action: String,
    /// The filter or target, as given.
    pub filter: serde_json::Value,
    /// How many operations it touched.
    pub affected: u64,
    /// Why.
    pub reason: Option<String>,
    /// Anything else worth keeping (mode, rate, dry run figures).
    pub details: serde_json::Value,
}

/// An audit log row.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AuditRecord {
    /// The row id.
    pub id: i64,
    /// When.
    pub at: DateTime<Utc>,
    /// The entry.
    #[serde(flatten)]
    pub entry: AuditEntry,
}

/// The operator's side of a store.
#[async_trait]
pub trait OperatorStore: Store {
    /// Sets (or replaces) a pause or postponement.
    async fn control_set(&self, params: ControlSetParams) -> Result<Control>;

    /// Removes the control on `scope`/`value`; false when there was none.
    async fn control_remove(&self, scope: ControlScope, value: &str) -> Result<bool>;

    /// Controls in force now (lapsed ones are left out).
    async fn control_list(&self) -> Result<Vec<Control>>;

    /// How many operations match `filter`, per status (statuses with none are left out): what a
    /// quarantine, release or pause would touch, counted before it runs.
    async fn operation_count_matching(
        &self,
        filter: &OperationFilter,
    ) -> Result<BTreeMap<Status, u64>>;

    /// The dry run of a re-drive.
    async fn redrive_preview(
        &self,
        filter: &OperationFilter,
        include_cancelled: bool,
        samples: u32,
    ) -> Result<RedrivePreview>;

    /// Re-drives one batch; see [`RedriveParams`].
    async fn operation_redrive(&self, params: RedriveParams) -> Result<Vec<Redriven>>;

    /// Quarantines pending operations; returns how many.
    async fn operation_quarantine(&self, params: QuarantineParams) -> Result<u64>;

    /// Releases held operations; returns how many.
    async fn operation_release(&self, params: ReleaseParams) -> Result<u64>;

    /// Takes reconciling operations due for their reconcile hook.
    async fn operation_reconcile_due(&self, params: ReconcileDueParams) -> Result<Vec<Operation>>;

    /// Resolves a reconciling operation; [`Error::InvalidInput`](crate::Error::InvalidInput) when
    /// it is not reconciling.
    async fn operation_reconcile_resolve(&self, params: ResolveParams) -> Result<Status>;

    /// The at-a-glance figures.
    async fn stats(&self) -> Result<StatsReport>;

    /// Attempts and promotions to dead per minute since `since`, oldest minute first; minutes
    /// with neither are left out.
    async fn activity_per_minute(&self, since: DateTime<Utc>) -> Result<Vec<ActivityMinute>>;

    /// Appends to the audit log.
    async fn audit_insert(&self, entry: AuditEntry) -> Result<()>;

    /// The newest audit rows first.
    async fn audit_list(&self, limit: u32) -> Result<Vec<AuditRecord>>;

    /// Dead operations whose promotion has not been announced yet, oldest first.
    async fn operation_dead_unalerted(&self, limit: u32) -> Result<Vec<Operation>>;

    /// Records that these promotions were announced.
    async fn operation_mark_alerted(&self, ids: Vec<OperationId>) -> Result<()>;

    /// Registers a running worker, or refreshes its row (`last_seen_at` = now); see
    /// [`WorkerRecord`](crate::WorkerRecord).
    async fn worker_beat(&self, params: WorkerBeatParams) -> Result<()>;

    /// Removes a worker's row (its clean shutdown); false when there was none.
    async fn worker_remove(&self, id: &str) -> Result<bool>;

    /// The workers seen within the last `seen_within`, by id.
    async fn worker_list(&self, seen_within: Duration) -> Result<Vec<WorkerRecord>>;

    /// Pending operations, per kind, whose kind no worker seen within `seen_within` handles.
    async fn operation_unhandled(&self, seen_within: Duration) -> Result<Vec<UnhandledKind>>;
}
