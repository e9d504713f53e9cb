//! Writes attempt outcomes in batches: many finished attempts become one fenced store call.
//! An outcome is never dropped because the database is briefly unreachable: the batch is kept and
//! retried until it is written or the process stops.
//!
//! The worker's counters of outcomes (succeeded, failed, released, obsolete) count what was
//! written, not what handlers returned, so that a worker's summary agrees with the attempt
//! history: an outcome the fence refused counts as a stale claim only.

use std::sync::Arc;
use std::time::Duration;

use oprec_core::store::{CompleteParams, CompleteResult};
use oprec_core::{AttemptOutcome, TerminalReason, Transition, WorkerStore};
use tokio::sync::mpsc;

use crate::Stats;

/// The most outcomes written by one store call.
const BATCH: usize = 1000;

/// Sends outcomes to the completer task.
pub(crate) type CompletionSender = mpsc::UnboundedSender<CompleteParams>;

/// Runs until every sender is dropped and the queue is empty.
pub(crate) async fn run(
    store: Arc<dyn WorkerStore>,
    mut rx: mpsc::UnboundedReceiver<CompleteParams>,
    stats: Arc<Stats>,
) {
    let mut batch = Vec::with_capacity(BATCH);
    while let Some(first) = rx.recv().await {
        batch.push(first);
        while batch.len() < BATCH {
            match rx.try_recv() {
                Ok(p) => batch.push(p),
                Err(_) => break,
            }
        }
        let mut backoff = Duration::from_millis(50);
        loop {
            match store.operation_complete_many(batch.clone()).await {
                Ok(results) => {
                    for (p, r) in batch.iter().zip(results) {
                        match r {
                            CompleteResult::Applied => {
                                Stats::add(&stats.completions, 1);
                                Stats::add(counter(&stats, &p.transition), 1);
                            }
                            CompleteResult::Stale => {
                                Stats::add(&stats.stale_claims, 1);
                                tracing::warn!(operation = %p.id,
                                    "stale claim: the lease was taken over; this outcome changed nothing");
                            }
                        }
                    }
                    break;
                }
                Err(e) => {
                    tracing::warn!(error = %e, pending = batch.len(), "writing outcomes failed; retrying");
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(Duration::from_secs(5));
                }
            }
        }
        batch.clear();
    }
}

/// The counter an applied transition adds to: its attempt's outcome as the history records it.
fn counter<'s>(stats: &'s Stats, t: &Transition) -> &'s std::sync::atomic::AtomicU64 {
    match t.attempt_outcome() {
        AttemptOutcome::Succeeded => &stats.succeeded,
        AttemptOutcome::Released => &stats.released,
        AttemptOutcome::Rejected if t.terminal_reason() == Some(TerminalReason::Obsolete) => {
            &stats.obsolete
        }
        AttemptOutcome::Vanished => &stats.vanished,
        _ => &stats.failed,
    }
}
