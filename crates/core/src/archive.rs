//! Archive: operations taken out of the store with their whole history, to a file an operator
//! keeps, and put back from it. An [`ArchivedOperation`] is everything the store holds about one
//! operation (every column of its row, its attempts and its durable steps), so that a restore
//! gives back the same record, with the same id, status and history.
//!
//! The stores only read, remove and insert what they are given: which operations to take (only
//! terminal ones), when a removal is fenced away and what a restore that finds the id taken
//! means are decided here and in the operator library (`oprec-ops`).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::operator::OperationFilter;
use crate::store::Step;
use crate::{Attempt, Operation, OperationId, Status};

/// One operation as the store holds it: the row, its attempts and its durable steps.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ArchivedOperation {
    /// The `operations` row's record columns.
    pub operation: Operation,
    /// The row's bookkeeping columns that [`Operation`] leaves out.
    pub bookkeeping: Bookkeeping,
    /// Every attempt, oldest first.
    pub attempts: Vec<Attempt>,
    /// Every completed durable step, by name.
    pub steps: Vec<Step>,
}

/// The columns of an `operations` row kept for the maintenance loops rather than for readers:
/// archived and restored with the row so that a restored operation is not announced twice.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Bookkeeping {
    /// Reconcile hand-offs made so far.
    pub reconcile_attempts: u32,
    /// When the promotion to dead was announced.
    pub alerted_at: Option<DateTime<Utc>>,
    /// When the announcement may next be taken.
    pub alert_due_at: Option<DateTime<Utc>>,
    /// Failed announcements.
    pub alert_failures: u32,
}

impl ArchivedOperation {
    /// The fence a removal of this record checks: the row must still be as it was read.
    pub fn fence(&self) -> RemoveFence {
        RemoveFence {
            id: self.operation.id,
            status: self.operation.status,
            updated_at: self.operation.updated_at,
            attempt: self.operation.attempt,
            attempts: self.attempts.len() as u32,
            alerted_at: self.bookkeeping.alerted_at,
        }
    }
}

/// Read one batch of terminal operations with their history, in id order.
#[derive(Clone, Debug)]
pub struct OperationExportParams {
    /// Which operations.
    pub filter: OperationFilter,
    /// Only these statuses; the store takes only the terminal ones among them, so a pending or
    /// running operation is never read for removal.
    pub statuses: Vec<Status>,
    /// Keyset paging: only ids after this one.
    pub after: Option<OperationId>,
    /// The most operations.
    pub limit: u32,
}

/// What an archived operation looked like when it was read: its removal applies only while the
/// row still is so (a re-drive, an announcement or a new attempt meanwhile keeps it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RemoveFence {
    /// The operation.
    pub id: OperationId,
    /// Its status (terminal).
    pub status: Status,
    /// Its last change.
    pub updated_at: DateTime<Utc>,
    /// Its attempt count.
    pub attempt: u32,
    /// Its attempt rows.
    pub attempts: u32,
    /// When its death was announced.
    pub alerted_at: Option<DateTime<Utc>>,
}

/// Remove archived operations (with their attempts and steps), each only if its fence holds, it
/// is terminal, and no operation that stays names it as `redrive_of`.
#[derive(Clone, Debug)]
pub struct OperationRemoveParams {
    /// The operations, as read.
    pub fences: Vec<RemoveFence>,
}

/// Insert archived operations back, with their ids, history and bookkeeping, never overwriting.
#[derive(Clone, Debug)]
pub struct OperationRestoreParams {
    /// The operations, inserted in this order (a re-drive's parent before its child).
    pub records: Vec<ArchivedOperation>,
}

/// What a restore did with one record.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RestoreOutcome {
    /// Inserted, with its attempts and steps.
    Restored,
    /// An operation with this id is in the store: nothing was written.
    Exists,
    /// Another operation of the kind holds its idempotency key: nothing was written.
    KeyTaken,
    /// It re-drives an operation (`redrive_of`) that is not in the store: nothing was written.
    ParentMissing,
}
