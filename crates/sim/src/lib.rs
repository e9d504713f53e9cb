//! oprec-sim: what a retry policy does to a dependency during an outage, computed.
//!
//! `N` operations meet a dependency that is down for a while. Every operation runs on a virtual
//! clock through the same [`RetryPolicy::retry_at`](oprec_core::RetryPolicy::retry_at) decision the
//! workers use — ladder, jitter, attempt bound, deadline — so the figures are the policy's, not a
//! model of it: scheduled attempts in total and per day, attempts that hit the dependency while it
//! was down, the peak wake-ups per second right after recovery (the retry storm), operations that
//! end dead or succeeded, and when the backlog is gone. [`chart`] draws attempts per minute as SVG.
//!
//! Not here: capacity. Every scheduled attempt is counted as if a worker were free to make it, which
//! is what "scheduled attempts" means here (72 million a day for 50,000 jobs on a fixed
//! 60-second loop).

mod chart;
mod policy_spec;
mod simulate;

pub use chart::chart;
pub use policy_spec::{PolicySpec, SpecError};
pub use simulate::{Outage, SimReport, simulate};
