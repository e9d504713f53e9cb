//! Writes attempt outcomes in batches: many finished attempts become one fenced store call, and
//! up to two such calls run at once, so the store writes one batch while the next gathers (and
//! while the worker's claims run beside them). An outcome is never dropped because the database
//! is briefly unreachable: the batch is kept and retried until it is written or the process
//! stops.

use std::sync::Arc;
use std::time::Duration;

use oprec_core::Store;
use oprec_core::store::{CompleteParams, CompleteResult};
use tokio::sync::mpsc;
use tokio::sync::mpsc::error::TryRecvError;
use tokio::task::JoinSet;

use crate::Stats;

/// The most outcomes written by one store call.
const BATCH: usize = 1000;
/// Store calls writing outcomes at once.
const WRITES_IN_FLIGHT: usize = 2;
/// While one write runs, a second starts only with at least this many outcomes: fewer wait for
/// the first to finish, and go in the next, larger batch.
const SECOND_WRITE_MIN: usize = 100;

/// Sends outcomes to the completer task.
pub(crate) type CompletionSender = mpsc::UnboundedSender<CompleteParams>;

/// Runs until every sender is dropped, the queue is empty and every write has finished.
pub(crate) async fn run(
    store: Arc<dyn Store>,
    mut rx: mpsc::UnboundedReceiver<CompleteParams>,
    stats: Arc<Stats>,
) {
    let mut batch = Vec::with_capacity(BATCH);
    let mut writes = JoinSet::new();
    let mut open = true;
    let wif: usize = std::env::var("XWIF")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(WRITES_IN_FLIGHT);
    let smin: usize = std::env::var("XSMIN")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(SECOND_WRITE_MIN);
    loop {
        while open && batch.len() < BATCH {
            match rx.try_recv() {
                Ok(p) => batch.push(p),
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => open = false,
            }
        }
        let start =
            writes.len() < wif && !batch.is_empty() && (writes.is_empty() || batch.len() >= smin);
        if start {
            let batch = std::mem::replace(&mut batch, Vec::with_capacity(BATCH));
            writes.spawn(write(store.clone(), batch, stats.clone()));
            continue;
        }
        if !open && batch.is_empty() && writes.is_empty() {
            return;
        }
        tokio::select! {
            Some(_) = writes.join_next(), if !writes.is_empty() => {}
            p = rx.recv(), if open && batch.len() < BATCH => match p {
                Some(p) => batch.push(p),
                None => open = false,
            },
            else => return,
        }
    }
}

/// Writes one batch, retrying until it is written.
async fn write(store: Arc<dyn Store>, batch: Vec<CompleteParams>, stats: Arc<Stats>) {
    let mut backoff = Duration::from_millis(50);
    loop {
        match store.operation_complete_many(batch.clone()).await {
            Ok(results) => {
                for (p, r) in batch.iter().zip(results) {
                    match r {
                        CompleteResult::Applied => Stats::add(&stats.completions, 1),
                        CompleteResult::Stale => {
                            Stats::add(&stats.stale_claims, 1);
                            tracing::warn!(operation = %p.id,
                                "stale claim: the lease was taken over; this outcome changed nothing");
                        }
                    }
                }
                return;
            }
            Err(e) => {
                tracing::warn!(error = %e, pending = batch.len(), "writing outcomes failed; retrying");
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_secs(5));
            }
        }
    }
}
