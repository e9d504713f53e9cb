//! The loop every bulk workflow runs: ask the store for one batch at a time (one transaction
//! each, so row locks are held briefly), stop when the work is done, a batch comes back empty, a
//! stop is asked for between two batches, or a batch fails. An interrupted workflow run again
//! goes on with the rest: each batch re-selects what is still to do.

use std::future::Future;

use tokio_util::sync::CancellationToken;

/// The default number of operations per store call.
pub const DEFAULT_BATCH: u64 = 500;
/// The largest batch accepted.
pub const MAX_BATCH: u64 = 5_000;

/// How a run of batches ended.
#[derive(Debug, Default)]
pub struct Batches {
    /// Operations done.
    pub done: u64,
    /// Store calls made.
    pub batches: u64,
    /// A stop was asked for with work left.
    pub interrupted: bool,
    /// The failure that ended the run, with `done` operations done before it.
    pub failure: Option<oprec_core::Error>,
}

impl Batches {
    /// Whether every planned operation was done (or there were no more to do).
    pub fn complete(&self) -> bool {
        self.failure.is_none() && !self.interrupted
    }
}

/// What one batch returns: something with a count.
pub trait BatchOutput {
    /// How many operations the batch did.
    fn count(&self) -> u64;
}

impl BatchOutput for u64 {
    fn count(&self) -> u64 {
        *self
    }
}

impl<T> BatchOutput for Vec<T> {
    fn count(&self) -> u64 {
        self.len() as u64
    }
}

/// Runs `step(done, ask)` until `total` are done, a batch does nothing, `stop`
/// is cancelled or a step fails; `on_batch` sees each batch's output.
pub(crate) async fn run<T, F, Fut>(
    total: u64,
    batch: u64,
    stop: &CancellationToken,
    mut step: F,
    mut on_batch: impl FnMut(&T),
) -> Batches
where
    T: BatchOutput,
    F: FnMut(u64, u32) -> Fut,
    Fut: Future<Output = oprec_core::Result<T>>,
{
    let mut b = Batches::default();
    let batch = batch.clamp(1, MAX_BATCH);
    while b.done < total {
        if stop.is_cancelled() {
            b.interrupted = true;
            break;
        }
        let ask = batch.min(total - b.done);
        match step(b.done, ask as u32).await {
            Ok(out) => {
                let n = out.count();
                b.done += n;
                b.batches += 1;
                on_batch(&out);
                // Only an empty batch says the work is done: a short one may have met rows a
                // concurrent run of the same workflow held or had just done (re-drives as new
                // that ran at once stopped at 1,650 copies of 2,000 on a short batch).
                if n == 0 {
                    break;
                }
            }
            Err(e) => {
                b.failure = Some(e);
                break;
            }
        }
    }
    b
}
