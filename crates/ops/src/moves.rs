//! Quarantine and release: pending operations that cannot succeed as they are (all malformed
//! payloads of a kind, say) set aside as held with a reason, and held ones returned to pending,
//! eligible at once, when the cause is fixed. Counted first (what would move), then moved in
//! batches with progress and a stop, then audited.

use std::collections::BTreeMap;

use oprec_core::operator::{
    AuditEntry, CountMatchingParams, OperationFilter, QuarantineParams, ReleaseParams,
};
use oprec_core::{OperatorStore, Status};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::batches::{self, Batches, DEFAULT_BATCH};
use crate::filter::narrows;
use crate::{InputError, Result, Who};

/// Which way operations move.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Move {
    /// Pending → held, saying why.
    Quarantine {
        /// Kept on each operation (its last error's decision) and in the audit log.
        reason: String,
    },
    /// Held → pending, eligible now.
    Release,
}

/// A checked quarantine or release.
#[derive(Clone, Debug, PartialEq)]
pub struct MoveRequest {
    /// Which way.
    pub how: Move,
    /// Which operations.
    pub filter: OperationFilter,
    /// At most this many.
    pub limit: Option<u64>,
}

impl MoveRequest {
    /// A quarantine; refused without a narrowing filter (to stop all work for a while, pause).
    pub fn quarantine(
        filter: OperationFilter,
        reason: String,
        limit: Option<u64>,
    ) -> Result<Self, InputError> {
        if !narrows(&filter) {
            return Err(InputError::new(
                "quarantine needs a filter (kind, class, error text, dependency or id); to stop \
                 all work for a while, pause instead",
            ));
        }
        Ok(MoveRequest {
            how: Move::Quarantine { reason },
            filter,
            limit,
        })
    }

    /// A release of the held operations `filter` matches.
    pub fn release(filter: OperationFilter, limit: Option<u64>) -> Self {
        MoveRequest {
            how: Move::Release,
            filter,
            limit,
        }
    }

    /// The status operations are taken from.
    pub fn from_status(&self) -> Status {
        match self.how {
            Move::Quarantine { .. } => Status::Pending,
            Move::Release => Status::Held,
        }
    }

    /// `quarantine` or `release`, as the audit log names it.
    pub fn action(&self) -> &'static str {
        match self.how {
            Move::Quarantine { .. } => "quarantine",
            Move::Release => "release",
        }
    }

    /// How many operations match, per status, and so how many would move.
    pub async fn review<S: OperatorStore + ?Sized>(&self, store: &S) -> Result<MoveReview> {
        let counts = store
            .operation_count_matching(CountMatchingParams {
                filter: self.filter.clone(),
            })
            .await?;
        let matching = counts.get(&self.from_status()).copied().unwrap_or(0);
        Ok(MoveReview {
            planned: self.limit.map_or(matching, |l| l.min(matching)),
            matching,
            counts,
        })
    }

    /// Moves in batches until `limit` moved (or, without one, until none are left), stopping
    /// between two batches when `stop` is cancelled; audits what moved, with `note` as the
    /// entry's reason (a quarantine's own reason when there is no note). `on_batch` sees how many
    /// each batch moved.
    pub async fn apply<S: OperatorStore + ?Sized>(
        &self,
        store: &S,
        who: &Who,
        note: Option<&str>,
        stop: &CancellationToken,
        mut on_batch: impl FnMut(u64),
    ) -> MoveDone {
        let run = batches::run(
            self.limit.unwrap_or(u64::MAX),
            DEFAULT_BATCH,
            stop,
            |_, limit| async move {
                match &self.how {
                    Move::Quarantine { reason } => {
                        store
                            .operation_quarantine(QuarantineParams {
                                filter: self.filter.clone(),
                                reason: reason.clone(),
                                actor: who.actor.clone(),
                                limit,
                            })
                            .await
                    }
                    Move::Release => {
                        store
                            .operation_release(ReleaseParams {
                                filter: self.filter.clone(),
                                limit,
                            })
                            .await
                    }
                }
            },
            |n: &u64| on_batch(*n),
        )
        .await;
        let reason = match (&self.how, note) {
            (_, Some(note)) => Some(note.to_owned()),
            (Move::Quarantine { reason }, None) => Some(reason.clone()),
            (Move::Release, None) => None,
        };
        let audit_failure = if run.done > 0 {
            store
                .audit_insert(AuditEntry {
                    actor: who.actor.clone(),
                    action: self.action().to_owned(),
                    filter: serde_json::to_value(&self.filter).unwrap_or(json!({})),
                    affected: run.done,
                    reason,
                    details: who.details(json!({"limit": self.limit, "complete": run.complete()})),
                })
                .await
                .err()
        } else {
            None
        };
        MoveDone { run, audit_failure }
    }
}

/// What a quarantine or release would touch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MoveReview {
    /// Matches in the status the move takes from.
    pub matching: u64,
    /// How many would move (the matches, capped by the limit).
    pub planned: u64,
    /// Every match, per status (the others are left alone).
    pub counts: BTreeMap<Status, u64>,
}

/// What a quarantine or release did.
#[derive(Debug)]
pub struct MoveDone {
    /// The batches: how many moved, whether it was interrupted or failed.
    pub run: Batches,
    /// The audit entry could not be written (the move itself stands).
    pub audit_failure: Option<oprec_core::Error>,
}
