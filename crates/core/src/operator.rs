//! What operators do to many operations at once (re-drive, quarantine, release, cancel, pause)
//! and what they look at (stats, activity, the audit log, the workers): the [`OperatorStore`]
//! trait and its vocabulary. Operator workflows (plan, dry run, apply in batches, audit) are
//! built on it by the `oprec-ops` crate; this module only says what one store call does.

use std::collections::BTreeMap;

use async_trait::async_trait;
use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};

pub use crate::control::{Control, ControlAction, ControlScope};
pub use crate::redrive_job::{
    BrakeRule, RedriveJob, RedriveJobListParams, RedriveJobSaveParams, RedriveJobState,
    RedriveJobStopParams,
};
pub use crate::resolution::{Resolution, Settlement};
pub use crate::stats::{AgeBucket, HELD_BACK_COUNT_MAX, HeldBack, OldestEligible, StatsReport};
use crate::{
    FailureClass, OperationId, PayloadMode, Result, Status, Store, TerminalReason, UnhandledKind,
    WorkerRecord,
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
    /// A new operation linked by `redrive_of`; the old one stays dead, marked `redriven_as` with
    /// its copy (no longer dead awaiting action).
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
    /// Leave out the operations that a control in force would hold back once re-driven (as the
    /// claim would see them: the row itself in place, a copy's kind and dependency as new), so
    /// that a paced re-drive releases them at its pace once the control lifts, not all at once.
    pub skip_held_back: bool,
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
    /// The distinct last errors of the matches, per kind, the most frequent first, with how many
    /// matches have each.
    pub errors: Vec<PreviewError>,
}

/// One distinct last error of a re-drive's matches.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PreviewError {
    /// The kind.
    pub kind: String,
    /// The last error summary (`None`: no error kept); in JSON, `last_error` in the record's
    /// shape.
    #[serde(
        rename = "last_error",
        serialize_with = "crate::failure::summary_as_error"
    )]
    pub error: Option<String>,
    /// How many matches of the kind ended with it.
    pub count: u64,
    /// When the first of them ended.
    pub first_ended_at: Option<DateTime<Utc>>,
    /// When the last of them ended.
    pub last_ended_at: Option<DateTime<Utc>>,
    /// One of them, to look at (`oprec ops show`).
    pub example: OperationId,
}

/// One group of a re-drive preview.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PreviewGroup {
    /// The kind.
    pub kind: String,
    /// Whether the re-drive replays a snapshot or acts on today's data (`None`: enqueued before
    /// oprec kept it).
    pub payload_mode: Option<PayloadMode>,
    /// The last failure class.
    pub class: Option<FailureClass>,
    /// The terminal reason.
    pub reason: Option<TerminalReason>,
    /// The dependency the kind calls, as kept on the operations.
    pub dependency: Option<String>,
    /// How many.
    pub count: u64,
    /// When the first of them ended.
    pub first_ended_at: Option<DateTime<Utc>>,
    /// When the last of them ended.
    pub last_ended_at: Option<DateTime<Utc>>,
    /// When an operation of the same dependency (of the same kind, when the kind names none)
    /// first succeeded after the group's last death: a sign that the cause is gone (`None`: none
    /// has succeeded since).
    pub recovered_at: Option<DateTime<Utc>>,
}

/// One sampled match of a re-drive preview.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PreviewSample {
    /// The operation.
    pub id: OperationId,
    /// Its kind.
    pub kind: String,
    /// Its last error summary; in JSON, `last_error` in the record's shape.
    #[serde(
        rename = "last_error",
        serialize_with = "crate::failure::summary_as_error"
    )]
    pub error: Option<String>,
}

/// Move pending operations matching `filter` to held (quarantine), with
/// [`Ending::quarantined`](crate::Ending::quarantined) saying who and why.
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

/// Remove the control on `scope`/`value`.
#[derive(Clone, Debug)]
pub struct ControlRemoveParams {
    /// What it applies to.
    pub scope: ControlScope,
    /// The kind, class or dependency name.
    pub value: String,
}

/// Count what an operator action would touch.
#[derive(Clone, Debug)]
pub struct CountMatchingParams {
    /// Which operations.
    pub filter: OperationFilter,
}

/// The dry run of a re-drive.
#[derive(Clone, Debug)]
pub struct RedrivePreviewParams {
    /// Which operations.
    pub filter: OperationFilter,
    /// Cancelled operations too.
    pub include_cancelled: bool,
    /// How many matches to sample with their errors, and how many distinct errors to list.
    pub samples: u32,
}

/// Cancel operations that are not terminal and not running.
#[derive(Clone, Debug)]
pub struct CancelParams {
    /// The operations.
    pub ids: Vec<OperationId>,
}

/// Attempts and promotions to dead per minute since a time.
#[derive(Clone, Copy, Debug)]
pub struct ActivityParams {
    /// The first minute.
    pub since: DateTime<Utc>,
}

/// Audit rows, newest first: a page of them, only of one action and one actor when given.
#[derive(Clone, Debug, Default)]
pub struct AuditListParams {
    /// The most rows.
    pub limit: u32,
    /// Only entries of this action ("redrive", "pause", ...).
    pub action: Option<String>,
    /// Only entries of this actor.
    pub actor: Option<String>,
    /// Which page: the newest, or the one just older or newer than an entry.
    pub page: AuditPage,
}

/// A page of the audit log, by entry id: pages follow the log's order, so an entry appended
/// while an operator reads never shifts the older pages.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum AuditPage {
    /// The newest entries.
    #[default]
    Newest,
    /// The entries just older than this id.
    Older(i64),
    /// The entries just newer than this id (still shown newest first).
    Newer(i64),
}

impl AuditPage {
    /// The page a reader asked for by cursor: older than an entry (which wins when both are
    /// given), newer than one, or the newest.
    pub fn from_cursors(older_than: Option<i64>, newer_than: Option<i64>) -> Self {
        match (older_than, newer_than) {
            (Some(id), _) => AuditPage::Older(id),
            (None, Some(id)) => AuditPage::Newer(id),
            (None, None) => AuditPage::Newest,
        }
    }

    /// The entry the page starts from (exclusive), if any.
    pub fn from_id(self) -> Option<i64> {
        match self {
            AuditPage::Newest => None,
            AuditPage::Older(id) | AuditPage::Newer(id) => Some(id),
        }
    }

    /// Whether the page reads towards newer entries (stores read those oldest first and turn
    /// them, so that every page is shown newest first).
    pub fn is_newer(self) -> bool {
        matches!(self, AuditPage::Newer(_))
    }
}

/// The most audit entries one read returns.
pub const AUDIT_LIST_MAX: u32 = 10_000;

/// The longest action or actor an audit filter accepts: longer ones name no entry.
const AUDIT_FILTER_MAX_CHARS: usize = 200;

impl AuditListParams {
    /// Refuses a limit outside 1..=[`AUDIT_LIST_MAX`], and an action or actor that is empty,
    /// longer than 200 characters or holds a control character (the values are bound, never
    /// spliced; this only turns a mistake into a clear message).
    pub fn check(&self) -> crate::Result<()> {
        if self.limit == 0 || self.limit > AUDIT_LIST_MAX {
            return Err(crate::Error::InvalidInput(format!(
                "the audit limit must be between 1 and {AUDIT_LIST_MAX}, not {}",
                self.limit
            )));
        }
        for (name, value) in [("action", &self.action), ("actor", &self.actor)] {
            let Some(v) = value else { continue };
            if v.trim().is_empty()
                || v.chars().count() > AUDIT_FILTER_MAX_CHARS
                || v.chars().any(char::is_control)
            {
                return Err(crate::Error::InvalidInput(format!(
                    "the audit {name} filter must be 1 to {AUDIT_FILTER_MAX_CHARS} printable \
                     characters"
                )));
            }
        }
        Ok(())
    }
}

/// The workers seen lately, or the pending kinds none of them handles.
#[derive(Clone, Copy, Debug)]
pub struct WorkerListParams {
    /// Only workers seen within this long.
    pub seen_within: Duration,
}

/// The operator's side of a store.
#[async_trait]
pub trait OperatorStore: Store {
    /// Sets (or replaces) a pause or postponement. The pending operations it names are marked
    /// never woken: wake-ups sent before are dropped while it holds, and the scheduler wakes
    /// the operations as soon as it lapses.
    async fn control_set(&self, params: ControlSetParams) -> Result<Control>;

    /// Removes the control on `scope`/`value`; false when there was none. The pending operations
    /// it named are marked never woken, so that the scheduler wakes them on its next pass (a
    /// second or so), not after the re-wake interval.
    async fn control_remove(&self, params: ControlRemoveParams) -> Result<bool>;

    /// Controls in force now (lapsed ones are left out).
    async fn control_list(&self) -> Result<Vec<Control>>;

    /// How many operations match the filter, per status (statuses with none are left out): what a
    /// quarantine, release or pause would touch, counted before it runs.
    async fn operation_count_matching(
        &self,
        params: CountMatchingParams,
    ) -> Result<BTreeMap<Status, u64>>;

    /// The dry run of a re-drive.
    async fn redrive_preview(&self, params: RedrivePreviewParams) -> Result<RedrivePreview>;

    /// Re-drives one batch; see [`RedriveParams`].
    async fn operation_redrive(&self, params: RedriveParams) -> Result<Vec<Redriven>>;

    /// Creates or updates a re-drive job's row and returns it as stored (with any stop asked for
    /// meanwhile).
    async fn redrive_job_save(&self, params: RedriveJobSaveParams) -> Result<RedriveJob>;

    /// Asks a running re-drive job to stop; returns the job as stored (`None`: no such job). A
    /// job that is not running is returned unchanged.
    async fn redrive_job_stop(&self, params: RedriveJobStopParams) -> Result<Option<RedriveJob>>;

    /// Re-drive jobs, newest first (or the one asked for).
    async fn redrive_job_list(&self, params: RedriveJobListParams) -> Result<Vec<RedriveJob>>;

    /// Quarantines pending operations; returns how many.
    async fn operation_quarantine(&self, params: QuarantineParams) -> Result<u64>;

    /// Releases held operations; returns how many.
    async fn operation_release(&self, params: ReleaseParams) -> Result<u64>;

    /// Cancels operations that are not terminal and not running; returns the ids cancelled, in
    /// the order asked for.
    async fn operation_cancel(&self, params: CancelParams) -> Result<Vec<OperationId>>;

    /// The at-a-glance figures.
    async fn stats(&self) -> Result<StatsReport>;

    /// Attempts and promotions to dead per minute since `since`, oldest minute first; minutes
    /// with neither are left out.
    async fn activity_per_minute(&self, params: ActivityParams) -> Result<Vec<ActivityMinute>>;

    /// Appends to the audit log.
    async fn audit_insert(&self, entry: AuditEntry) -> Result<()>;

    /// Audit rows newest first: the page `params` names, of its action and actor only when
    /// given.
    async fn audit_list(&self, params: AuditListParams) -> Result<Vec<AuditRecord>>;

    /// The alert log, newest first: what was told to whom, and whether it arrived.
    async fn alert_list(
        &self,
        params: crate::alert::AlertListParams,
    ) -> Result<Vec<crate::alert::AlertEntry>>;

    /// The workers seen within `seen_within`, by id.
    async fn worker_list(&self, params: WorkerListParams) -> Result<Vec<WorkerRecord>>;

    /// Pending operations, per kind, whose kind no worker seen within `seen_within` handles.
    async fn operation_unhandled(&self, params: WorkerListParams) -> Result<Vec<UnhandledKind>>;

    /// The leaderships in force (the maintenance leader, when there is one).
    async fn leader_list(&self) -> Result<Vec<crate::maintenance::Leadership>>;

    /// The kinds' policies as workers last published them (`operation_kinds`), by kind.
    async fn kind_list(&self) -> Result<Vec<crate::KindRecord>>;

    /// One batch of terminal operations with their whole history, in id order; see
    /// [`OperationExportParams`](crate::archive::OperationExportParams).
    async fn operation_export(
        &self,
        params: crate::archive::OperationExportParams,
    ) -> Result<Vec<crate::archive::ArchivedOperation>>;

    /// Removes archived operations whose fences hold, in one transaction; returns the ids
    /// removed. See [`OperationRemoveParams`](crate::archive::OperationRemoveParams).
    async fn operation_remove(
        &self,
        params: crate::archive::OperationRemoveParams,
    ) -> Result<Vec<OperationId>>;

    /// Inserts archived operations back in one transaction, never overwriting; one outcome per
    /// record, in order.
    async fn operation_restore(
        &self,
        params: crate::archive::OperationRestoreParams,
    ) -> Result<Vec<crate::archive::RestoreOutcome>>;
}
