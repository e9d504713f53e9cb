//! oprec-core: the vocabulary of oprec.
//!
//! An operation is a row of intent: identity, kind, immutable payload, status, attempts, the next
//! time it may run and the deadline after which it must not. This crate defines that record, the
//! failure classes and what each one does next ([`RetryPolicy`], [`Ladder`], [`Transition`]), the
//! [`Clock`] every time decision goes through, and the [`Store`] trait that backends implement.
//!
//! It is not a driver: it has no database, broker or network code, so every decision here can be
//! tested deterministically with a [`ManualClock`].

mod clock;
mod error;
mod failure;
pub mod frame;
mod id;
mod ladder;
mod operation;
pub mod operator;
mod outcome;
mod policy;
mod status;
pub mod store;
mod transition;
pub mod transport;
mod worker_record;

pub use clock::{Clock, ManualClock, SystemClock};
pub use error::{Error, Result};
pub use failure::{Failure, FailureClass, OperationError};
pub use id::OperationId;
pub use ladder::{Exponential, Jitter, Ladder};
pub use operation::{
    Attempt, DEFAULT_MAX_PAYLOAD_BYTES, EnqueueOptions, NewOperation, Operation, OperationDetail,
};
pub use operator::OperatorStore;
pub use outcome::Outcome;
pub use policy::{
    Bounded, DeclaredIo, NoBound, NoTimeout, PolicyBuilder, RetryPolicy, Timed, UndeclaredIo,
};
pub use status::{AttemptOutcome, ParseEnumError, Status, TerminalReason};
pub use store::Store;
pub use transition::{ClaimContext, RetryDecision, Transition};
pub use transport::{AckToken, Delivery, Transport};
pub use worker_record::{UnhandledKind, WORKER_LIVE_SECS, WorkerBeatParams, WorkerRecord};
