//! oprec-runtime: the processes around the store. Workers take wake-ups, claim operations, run
//! their kind's handler under its timeout with a heartbeat, and write the outcome through the
//! fenced store call, in batches. The scheduler publishes wake-ups after enqueue and re-wakes
//! eligible operations whose wake-up was lost; the rescuer turns expired leases into vanished
//! attempts and ends operations past their deadline. Also here: the kind registry and the
//! in-memory transport, the embedded default.
//!
//! Not here: SQL or broker protocols (the store and transport crates), or operator commands
//! (oprec-cli).

mod client;
mod completer;
mod context;
mod dead_letter;
mod executor;
mod kind;
mod memory;
mod presence;
mod reconciler;
mod rescuer;
mod scheduler;
mod stats;
mod worker;

pub use client::Client;
pub use context::Context;
pub use dead_letter::{
    AlerterConfig, DeadLetter, DeadLetterSink, TracingSink, WebhookSink, alert_once,
};
pub use kind::{Kind, Reconciled, Registry};
pub use oprec_core::PayloadMode;
pub use memory::MemoryTransport;
pub use reconciler::{ReconcileReport, ReconcilerConfig, reconcile_once};
pub use rescuer::{RescueReport, RescuerConfig, rescue_once};
pub use scheduler::{SchedulerConfig, schedule_once};
pub use stats::{Stats, StatsSnapshot};
pub use worker::{RunReport, Worker, WorkerConfig};
