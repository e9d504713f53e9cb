//! Runs one claimed operation: the still-needed check, the handler under its timeout (abandoned
//! if the worker's heartbeat finds the lease lost, see [`crate::held`]), and the policy's
//! decision, sent to the completer. A handler that panics is caught: its attempt is recorded at
//! once as an unrecognised error carrying the panic's message, instead of waiting for its lease
//! to expire and counting as vanished.
//!
//! The handler's context carries a cancellation token, a child of the claim's loss signal: it
//! fires when the heartbeat finds the lease lost, and also when the attempt times out or ends, so
//! work the handler spawned stops with it. An attempt whose handler committed a fenced
//! transaction ([`crate::Fenced`]) has had its outcome written already: nothing more is sent.

use std::any::Any;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use tracing::{Instrument, Span};

use oprec_core::store::{CompleteParams, CompleteResult};
use oprec_core::{ClaimContext, Claimed, Clock, Failure, Outcome, Transition, WorkerStore};
use tokio_util::sync::CancellationToken;

use crate::attempt_span;
use crate::completer::{Completion, CompletionSender};
use crate::context::AttemptRules;
use crate::fenced::FencedState;
use crate::tally::{Labels, Tally};
use crate::{Context, Registry, Stats};

pub(crate) struct Executor {
    pub store: Arc<dyn WorkerStore>,
    pub registry: Arc<Registry>,
    pub clock: Arc<dyn Clock>,
    pub stats: Arc<Stats>,
    pub tally: Arc<Tally>,
    pub completions: CompletionSender,
    /// This worker's id, on every attempt span.
    pub worker_id: String,
    /// The application's code version, on every attempt span.
    pub code_version: Option<String>,
}

impl Executor {
    /// Runs `op` in its attempt span (see [`crate::attempt_span`]), which follows from the
    /// span of the claim batch `claim`; `lost` fires if the worker's heartbeat finds its lease
    /// taken over; `let_go` lets the worker's hold on the claim go (once a fenced commit has
    /// ended it).
    pub async fn execute(
        &self,
        op: Claimed,
        lost: CancellationToken,
        let_go: Arc<dyn Fn() + Send + Sync>,
        claim: Span,
    ) {
        let span =
            attempt_span::attempt(&op, &self.worker_id, self.code_version.as_deref(), &claim);
        drop(claim);
        self.attempt(op, lost, let_go, &span)
            .instrument(span.clone())
            .await;
    }

    /// The attempt itself; `span` is its attempt span, which goes with its outcome to the
    /// completer (and so stays open until the outcome is written).
    async fn attempt(
        &self,
        op: Claimed,
        lost: CancellationToken,
        let_go: Arc<dyn Fn() + Send + Sync>,
        span: &Span,
    ) {
        let token = op.claim_token();
        let labels = self.tally.labels(&op);
        let finish = |transition: Transition| {
            attempt_span::record_transition(span, &transition);
            let _ = self.completions.send(Completion::Outcome(
                CompleteParams {
                    id: op.id,
                    claim_token: token,
                    transition,
                },
                labels,
                span.clone(),
            ));
        };
        let Some(kind) = self.registry.get(&op.kind) else {
            // Claims filter by known kinds; this only happens if the registry changed under us.
            finish(Transition::release(self.clock.now()));
            return;
        };
        // The still-needed check may call out too: a lost lease abandons it as well.
        let needed = tokio::select! {
            needed = kind
                .is_still_needed(op.payload.clone())
                .instrument(tracing::info_span!("oprec.still_needed")) => needed,
            () = lost.cancelled() => {
                self.abandoned(&op, span);
                return;
            }
        };
        if !needed {
            finish(Transition::cancel_obsolete());
            return;
        }
        // Fires with the loss of the lease, and at the end of the attempt (on every return, and
        // when the drain aborts the task).
        let cancel = lost.child_token();
        let _end = cancel.clone().drop_guard();
        let ctx = Context::for_attempt(
            &op,
            token,
            self.store.clone(),
            cancel.clone(),
            AttemptRules {
                policy: kind.policy().clone(),
                claim: ClaimContext::from(&op),
                clock: self.clock.clone(),
                let_go,
            },
        );
        let timeout = kind
            .policy()
            .timeout()
            .to_std()
            .unwrap_or(Duration::from_secs(30));
        let handler = AssertUnwindSafe(kind.run(ctx.clone(), op.payload.clone()))
            .catch_unwind()
            .instrument(tracing::info_span!("oprec.handler", kind = %op.kind));
        let started = std::time::Instant::now();
        let result = tokio::select! {
            r = tokio::time::timeout(timeout, handler) => r,
            () = lost.cancelled() => {
                // A fenced commit ends the claim, so the heartbeat that follows finds it gone.
                if !self.fenced_written(&op, labels, &ctx, span) {
                    self.abandoned(&op, span);
                }
                return;
            }
        };
        cancel.cancel();
        #[cfg(feature = "metrics")]
        metrics::histogram!(crate::metrics::names::HANDLER_DURATION, "kind" => op.kind.clone())
            .record(started.elapsed().as_secs_f64());
        #[cfg(not(feature = "metrics"))]
        let _ = started;
        if self.fenced_written(&op, labels, &ctx, span) {
            if let (Ok(Ok(Err(failure))), FencedState::Committed(CompleteResult::Applied)) =
                (&result, ctx.fenced_state())
            {
                tracing::warn!(operation = %op.id, error = %failure.error.summary,
                    "the handler failed after its fenced transaction wrote the attempt's outcome; \
                     the outcome stands");
            }
            return;
        }
        let outcome = match result {
            Ok(Ok(Ok(()))) if ctx.fenced_state() != FencedState::None => {
                Outcome::Failed(Failure::transient(
                    "the handler returned without committing its fenced transaction: its writes \
                     were rolled back",
                ))
            }
            Ok(Ok(Ok(()))) => Outcome::success(),
            Ok(Ok(Err(failure))) => Outcome::Failed(failure),
            Ok(Err(panic)) => {
                Stats::add(&self.stats.panicked, 1);
                let message = panic_message(panic.as_ref());
                tracing::warn!(operation = %op.id, kind = %op.kind, panic = %message,
                    "the handler panicked; recorded as an unrecognised error");
                Outcome::Failed(Failure::unknown(format!("the handler panicked: {message}")))
            }
            Err(_elapsed) => {
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

impl Executor {
    /// The lease was taken over: whatever the attempt wrote now would be stale.
    fn abandoned(&self, op: &Claimed, span: &Span) {
        attempt_span::record_outcome(span, "abandoned");
        tracing::warn!(operation = %op.id,
            "stale claim: the lease was taken over; abandoning the attempt");
        Stats::add(&self.stats.stale_claims, 1);
    }

    /// Whether the handler's fenced transaction wrote the attempt's outcome (applied, or refused
    /// by the fence and rolled back), counting it as the completer counts what it writes.
    fn fenced_written(&self, op: &Claimed, labels: Labels, ctx: &Context, span: &Span) -> bool {
        match ctx.fenced_state() {
            FencedState::Committed(CompleteResult::Applied) => {
                attempt_span::record_outcome(span, "succeeded");
                span.record("written", "applied");
                Stats::add(&self.stats.completions, 1);
                Stats::add(&self.stats.succeeded, 1);
                self.tally.applied([(labels, &Transition::succeeded(None))]);
                true
            }
            FencedState::Committed(CompleteResult::Stale) => {
                attempt_span::record_outcome(span, "abandoned");
                span.record("written", "stale");
                Stats::add(&self.stats.stale_claims, 1);
                tracing::warn!(operation = %op.id,
                    "stale claim: the lease was taken over; the fenced transaction rolled back \
                     with its effect, and changed nothing");
                true
            }
            FencedState::None | FencedState::Open | FencedState::RolledBack => false,
        }
    }
}

/// What a panic said: its message when it was a string (as `panic!` makes), or a placeholder.
fn panic_message(panic: &(dyn Any + Send)) -> String {
    if let Some(s) = panic.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = panic.downcast_ref::<String>() {
        s.clone()
    } else {
        "(a panic without a message)".to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_message_is_read_from_either_string_type() {
        let s = std::panic::catch_unwind(|| panic!("boom {}", 7)).unwrap_err();
        assert_eq!(panic_message(s.as_ref()), "boom 7");
        let s = std::panic::catch_unwind(|| panic!("static")).unwrap_err();
        assert_eq!(panic_message(s.as_ref()), "static");
        let s = std::panic::catch_unwind(|| std::panic::panic_any(3_u8)).unwrap_err();
        assert_eq!(panic_message(s.as_ref()), "(a panic without a message)");
    }
}
