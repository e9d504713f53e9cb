//! Runs one claimed operation: the still-needed check, the handler under its timeout (abandoned
//! if the worker's heartbeat finds the lease lost, see [`crate::held`]), and the policy's
//! decision, sent to the completer.

use std::sync::Arc;
use std::time::Duration;

use oprec_core::store::CompleteParams;
use oprec_core::{ClaimContext, Claimed, Clock, Failure, Outcome, Transition, WorkerStore};
use tokio_util::sync::CancellationToken;

use crate::completer::CompletionSender;
use crate::{Context, Registry, Stats};

pub(crate) struct Executor {
    pub store: Arc<dyn WorkerStore>,
    pub registry: Arc<Registry>,
    pub clock: Arc<dyn Clock>,
    pub stats: Arc<Stats>,
    pub completions: CompletionSender,
}

impl Executor {
    /// Runs `op`; `lost` fires if the worker's heartbeat finds its lease taken over.
    pub async fn execute(&self, op: Claimed, lost: CancellationToken) {
        let token = op.claim_token();
        let finish = |transition: Transition| {
            let _ = self.completions.send(CompleteParams {
                id: op.id,
                claim_token: token,
                transition,
            });
        };
        let Some(kind) = self.registry.get(&op.kind) else {
            // Claims filter by known kinds; this only happens if the registry changed under us.
            finish(Transition::release(self.clock.now()));
            return;
        };
        if !kind.is_still_needed(op.payload.clone()).await {
            Stats::add(&self.stats.obsolete, 1);
            finish(Transition::cancel_obsolete());
            return;
        }
        let ctx = Context::new(&op, token, self.store.clone());
        let timeout = kind
            .policy()
            .timeout()
            .to_std()
            .unwrap_or(Duration::from_secs(30));
        let handler = kind.run(ctx, op.payload.clone());
        let started = std::time::Instant::now();
        let result = tokio::select! {
            r = tokio::time::timeout(timeout, handler) => r,
            () = lost.cancelled() => {
                // The lease was taken over: whatever we write now would be stale.
                tracing::warn!(operation = %op.id,
                    "stale claim: the lease was taken over; abandoning the attempt");
                Stats::add(&self.stats.stale_claims, 1);
                return;
            }
        };
        #[cfg(feature = "metrics")]
        metrics::histogram!(crate::metrics::names::HANDLER_DURATION, "kind" => op.kind.clone())
            .record(started.elapsed().as_secs_f64());
        #[cfg(not(feature = "metrics"))]
        let _ = started;
        let outcome = match result {
            Ok(Ok(())) => {
                Stats::add(&self.stats.succeeded, 1);
                Outcome::success()
            }
            Ok(Err(failure)) => {
                Stats::add(&self.stats.failed, 1);
                Outcome::Failed(failure)
            }
            Err(_elapsed) => {
                Stats::add(&self.stats.failed, 1);
                let summary = format!("the attempt exceeded its timeout of {timeout:?}");
                // Whether the effect happened is unknown for a kind that calls out; a local-only
                // kind has no remote effect to doubt.
                Outcome::Failed(if kind.policy().external_io() {
                    Failure::unknown(summary)
                } else {
                    Failure::transient(summary)
                })
            }
        };
        let transition = kind.policy().transition_for(
            &ClaimContext::from(&op),
            outcome,
            self.clock.now(),
            // The thread's generator: jitter needs no fresh seed from the kernel per attempt.
            &mut rand::rng(),
        );
        finish(transition);
    }
}
