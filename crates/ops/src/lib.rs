//! oprec-ops: the operator's workflows, written once for every front end. The `oprec` CLI, the
//! dashboard and library users call the same functions, so a re-drive paces, fences and audits
//! the same way wherever it is started, and a value a person types is read by one grammar.
//!
//! Each bulk workflow has one shape: a request checked from what was typed, a review (the dry
//! run: what matches now, changing nothing), an apply in batches with progress and a stop
//! between two batches, and one audit entry for what was done:
//!
//! | workflow | module |
//! | --- | --- |
//! | re-drive dead (or cancelled) operations, in place or as new, at a pace | [`redrive`] |
//! | a re-drive as a job over time: wait for controls, stop, brake, resume | [`redrive_job`] |
//! | quarantine pending operations, release held ones | [`moves`] |
//! | cancel operations that have not started their last attempt | [`cancel`] |
//! | resolve an unknown outcome | [`resolve`] |
//! | pause, postpone and resume a kind, class or dependency | [`controls`] |
//! | purge the broker's wake-ups (never the intent) | [`purge`] |
//! | preview retention: what would be removed, and when (read-only) | [`retention`] |
//! | archive ended operations to a JSON Lines file, verified before removal | [`archive`] |
//! | restore archived operations, never over anything | [`restore`] |
//! | list the recurring kinds' schedules and whether they are served (read-only) | [`schedules`] |
//!
//! The input grammar ([`time`], [`Pace`], [`filter`], [`Who`], [`payload`]) checks every value before a store
//! is opened and refuses bad input with an [`InputError`] that says what is accepted, in the
//! front end's own words ([`Spelling`]).
//!
//! Not here: rendering (tables, HTML, JSON layouts beyond a review's own) or transport; and no
//! decision about operations (which status, which words): those are `oprec-core`'s.

mod actor;
pub mod archive;
pub mod archive_line;
pub mod batches;
pub mod cancel;
pub mod controls;
mod error;
pub mod filter;
pub mod limits;
pub mod moves;
pub mod number;
mod pace;
pub mod payload;
pub mod purge;
pub mod redrive;
pub mod redrive_job;
pub mod resolve;
pub mod restore;
pub mod retention;
pub mod schedules;
mod spelling;
pub mod time;

pub use actor::{MAX_ACTOR, MAX_REASON, Who, reason};
pub use error::{Error, InputError, Result};
pub use pace::Pace;
pub use spelling::{Spelling, cut};
pub use tokio_util::sync::CancellationToken;
