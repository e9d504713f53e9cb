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
use oprec_core::{AttemptOutcome, Transition, WorkerStore};
use tokio::sync::{mpsc, oneshot};
use tracing::{Instrument, Span};

use crate::Stats;
use crate::tally::{Labels, Tally};

/// The most outcomes written by one store call.
const BATCH: usize = 1000;

/// What the completer is sent: an outcome to write, or a flush. Nearly every message is an
/// outcome, so it is kept unboxed: a box would cost an allocation per attempt to save a flush's
/// few bytes.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Completion {
    /// An attempt's outcome, with its operation's labels for the labelled counts and the
    /// attempt's span (`Span::none()` for a release at drain): the span is held until the outcome
    /// is written, so it ends when its outcome is stored.
    Outcome(CompleteParams, Labels, Span),
    /// Answered once every outcome sent before it is written (or found stale): the worker waits
    /// for it before it runs a suspect alone, so that if the suspect kills the process no
    /// finished attempt is lost with it.
    Flush(oneshot::Sender<()>),
}

/// Sends outcomes to the completer task.
pub(crate) type CompletionSender = mpsc::UnboundedSender<Completion>;

/// Waits until every outcome sent on `tx` so far is written (or the completer is gone).
pub(crate) async fn flush(tx: &CompletionSender) {
    let (done, written) = oneshot::channel();
    if tx.send(Completion::Flush(done)).is_ok() {
        let _ = written.await;
    }
}

/// Runs until every sender is dropped and the queue is empty.
pub(crate) async fn run(
    store: Arc<dyn WorkerStore>,
    mut rx: mpsc::UnboundedReceiver<Completion>,
    stats: Arc<Stats>,
    tally: Arc<Tally>,
) {
    let mut labels = Vec::with_capacity(BATCH);
    let mut batch = Vec::with_capacity(BATCH);
    let mut spans: Vec<Span> = Vec::with_capacity(BATCH);
    let mut flushes = Vec::new();
    while let Some(first) = rx.recv().await {
        let mut next = Some(first);
        while let Some(c) = next.take() {
            match c {
                Completion::Outcome(p, l, span) => {
                    batch.push(p);
                    labels.push(l);
                    spans.push(span);
                }
                // Outcomes sent after a flush wait for the next batch.
                Completion::Flush(done) => {
                    flushes.push(done);
                    break;
                }
            }
            if batch.len() < BATCH {
                next = rx.try_recv().ok();
            }
        }
        if batch.is_empty() {
            for done in flushes.drain(..) {
                let _ = done.send(());
            }
            continue;
        }
        let mut backoff = Duration::from_millis(50);
        let batch_span = crate::attempt_span::complete_batch(batch.len());
        for span in &spans {
            span.follows_from(&batch_span);
        }
        loop {
            match store
                .operation_complete_many(batch.clone())
                .instrument(batch_span.clone())
                .await
            {
                Ok(results) => {
                    let mut applied = Vec::with_capacity(batch.len());
                    for (((p, r), l), span) in batch.iter().zip(results).zip(&labels).zip(&spans) {
                        span.record(
                            "written",
                            match r {
                                CompleteResult::Applied => "applied",
                                CompleteResult::Stale => "stale",
                            },
                        );
                        match r {
                            CompleteResult::Applied => {
                                Stats::add(&stats.completions, 1);
                                Stats::add(counter(&stats, &p.transition), 1);
                                applied.push((*l, &p.transition));
                            }
                            CompleteResult::Stale => {
                                Stats::add(&stats.stale_claims, 1);
                                tracing::warn!(operation = %p.id,
                                    "stale claim: the lease was taken over; this outcome changed nothing");
                            }
                        }
                    }
                    tally.applied(applied);
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
        labels.clear();
        // The attempts' spans end here, their outcomes written.
        spans.clear();
        for done in flushes.drain(..) {
            let _ = done.send(());
        }
    }
}

/// The counter an applied transition adds to: its attempt's outcome as the history records it.
fn counter<'s>(stats: &'s Stats, t: &Transition) -> &'s std::sync::atomic::AtomicU64 {
    if t.failed_attempt() {
        return &stats.failed;
    }
    match t.attempt_outcome() {
        AttemptOutcome::Succeeded => &stats.succeeded,
        AttemptOutcome::Released => &stats.released,
        AttemptOutcome::Vanished => &stats.vanished,
        _ => &stats.obsolete,
    }
}
