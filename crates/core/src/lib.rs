//! oprec-core: the vocabulary of oprec.
//!
//! An operation is a row of intent: identity, kind, immutable payload, status, attempts, the next
//! time it may run and the deadline after which it must not. This crate defines that record, the
//! failure classes and what each one does next ([`RetryPolicy`], [`Ladder`], [`Transition`]), the
//! [`Clock`] every time decision goes through, and the [`Store`] trait that backends implement.
//!
//! It is not a driver: it has no database, broker or network code, so every decision here can be
//! tested deterministically with a [`ManualClock`].
//!
//! Core decides, stores apply: every state change a store writes was decided here
//! ([`Transition`] for the end of a claim, including a vanished one; [`Ending`] for the deadline
//! pass and quarantine; [`Settlement`] for a resolved reconciliation; [`IdempotentBatch`] for a
//! batch that repeats a key; [`not_held_back_sql`] for what a pause holds back), with its words.

pub mod alert;
pub mod archive;
mod claim_ahead;
mod clock;
mod control;
mod ending;
mod enqueue;
mod error;
mod failure;
pub mod fenced;
pub mod frame;
mod id;
mod kind_policy;
mod ladder;
pub mod limit;
pub mod maintenance;
mod operation;
pub mod operator;
mod outcome;
mod policy;
mod priority;
pub mod redrive_job;
mod resolution;
pub mod retention;
pub mod schedule;
mod stats;
mod status;
pub mod store;
pub mod store_layout;
mod trace_parent;
mod transition;
pub mod transport;
mod url;
mod worker_record;

pub use claim_ahead::{ClaimAhead, ClaimAheadRule};
pub use clock::{Clock, ManualClock, SystemClock};
pub use control::{
    Control, ControlAction, ControlScope, not_held_back_copy_sql, not_held_back_sql,
};
pub use ending::{Ending, ErrorPatch};
pub use enqueue::{DEFAULT_MAX_PAYLOAD_BYTES, EnqueueOptions, IdempotentBatch, NewOperation};
pub use error::{Error, Result};
pub use failure::{Failure, FailureClass, OperationError};
pub use fenced::FencedStore;
pub use id::OperationId;
pub use kind_policy::{KindPolicy, KindPublishParams, KindRecord};
pub use ladder::{Exponential, Jitter, Ladder};
pub use limit::{ClaimAllowance, Limit, LimitScope, LimitStore, LimitUse, RateWindow};
pub use maintenance::MaintenanceStore;
pub use operation::{Attempt, Operation, OperationDetail, PayloadMode};
pub use operator::OperatorStore;
pub use outcome::Outcome;
pub use policy::{
    Bounded, DEFAULT_SNOOZE_BUDGET, DEFAULT_UNKNOWN_RETRIES, DeclaredIo, NoBound, NoTimeout,
    PolicyBuilder, RetryPolicy, StatedJitter, Timed, UndeclaredIo, UnstatedJitter,
};
pub use priority::{
    PRIORITY_AGING, PRIORITY_DEFAULT, PRIORITY_LEVELS, PRIORITY_MAX, PRIORITY_MIN, check_priority,
};
pub use resolution::{Resolution, Settlement};
pub use retention::{FinishedStatus, Retention, RetentionPolicy, RetentionStore};
pub use schedule::{Missed, Schedule, ScheduleStore};
pub use stats::{
    AgeBucket, BACKLOG_SLOT_MINUTES, HELD_BACK_COUNT_MAX, HeldBack, NO_CLASS, OldestEligible,
    StatsReport, backlog_slot,
};
pub use status::{AttemptOutcome, ParseEnumError, Status, TerminalReason};
pub use store::{Claimed, EnqueueStore, Store, TransactionalEnqueue, WorkerStore};
pub use trace_parent::TraceParent;
pub use transition::{
    ClaimContext, Fence, RetryDecision, Transition, VANISHED_SUMMARY, VanishRule,
};
pub use transport::{AckToken, Delivery, KindDepth, Transport, WakeUp};
pub use url::{redact_url, url_encoding_hint, url_origin, url_secrets, url_shape_error};
pub use worker_record::{
    UNHANDLED_READ_MAX, UnhandledKind, WORKER_LIVE_SECS, WorkerBeatParams, WorkerRecord,
};

/// The store traits in scope, unnamed: `use oprec_core::prelude::*;` lets code call any store
/// method on a concrete store (a `PgStore`, a `SqliteStore`) without naming the trait it is on.
pub mod prelude {
    pub use crate::{
        EnqueueStore as _, MaintenanceStore as _, OperatorStore as _, RetentionStore as _,
        ScheduleStore as _, Store as _, Transport as _, WorkerStore as _,
    };
}

/// Every store trait at once: what a process that enqueues, works and maintains (or an operator
/// front end) holds. Implemented for every type that implements them all.
pub trait FullStore:
    EnqueueStore
    + WorkerStore
    + MaintenanceStore
    + OperatorStore
    + RetentionStore
    + ScheduleStore
    + LimitStore
{
}

impl<
    T: EnqueueStore
        + WorkerStore
        + MaintenanceStore
        + OperatorStore
        + RetentionStore
        + ScheduleStore
        + LimitStore,
> FullStore for T
{
}
