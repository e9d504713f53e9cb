//! oprec-runtime: the processes around the store. Workers take wake-ups, claim operations, run
//! their kind's handler under its timeout with a heartbeat, and write the outcome through the
//! fenced store call, in batches. The scheduler publishes wake-ups after enqueue and re-wakes
//! eligible operations whose wake-up was lost; the rescuer turns expired leases into vanished
//! attempts and ends operations past their deadline. Also here: the kind registry and the
//! in-memory transport, the embedded default.
//!
//! Features: `metrics` (counters, the handler histogram and the store's figures through the
//! `metrics` facade, names in [`metrics::names`]), `webhook` ([`WebhookSink`]), `otel` (each
//! attempt's span parented by the producer's stored trace context, and the producer's current
//! span stored at enqueue when it passes none; `current_traceparent`).
//!
//! Not here: SQL or broker protocols (the store and transport crates), or operator workflows
//! (oprec-ops).

mod attempt_span;
mod background;
mod broker_health;
mod client;
mod completer;
mod context;
mod dead_letter;
mod executor;
mod fenced;
mod group_commit;
mod held;
mod idle;
mod kind;
mod memory;
#[cfg(feature = "metrics")]
pub mod metrics;
#[cfg(feature = "otel")]
mod otel;
mod presence;
mod reconciler;
mod recurring;
mod rescuer;
mod retention;
mod scheduler;
mod stats;
mod tally;
mod upkeep;
#[cfg(feature = "webhook")]
mod webhook;
mod worker;

pub use client::{AfterCommit, Client};
pub use context::Context;
pub use dead_letter::{
    Alert, AlertReport, AlertRoutes, AlertSink, AlerterConfig, CONFIGURATION_PAUSE_ACTOR,
    DeadLetter, DeadLetterSink, OwnerAlert, TracingSink, alert_once,
};
pub use fenced::Fenced;
pub use kind::{Kind, Reconciled, Registry};
pub use memory::MemoryTransport;
pub use oprec_core::{Missed, PayloadMode, Schedule};
#[cfg(feature = "otel")]
pub use otel::current_traceparent;
pub use reconciler::{ReconcileReport, ReconcilerConfig, reconcile_once};
pub use recurring::{TICK_CHECK_EVERY, TickReport, tick_once};
pub use rescuer::{RescueReport, RescuerConfig, rescue_once};
pub use retention::{RetentionConfig, RetentionReport, retain_once};
pub use scheduler::{SchedulePass, Scheduler, SchedulerConfig, schedule_once};
pub use stats::{Stats, StatsSnapshot};
pub use upkeep::upkeep_once;
#[cfg(feature = "webhook")]
pub use webhook::WebhookSink;
pub use worker::{
    CODE_VERSION_ENV, MAX_LEASE, MIN_LEASE, RunReport, Worker, WorkerConfig, code_version_from_env,
};
