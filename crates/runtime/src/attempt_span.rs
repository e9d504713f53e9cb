//! The tracing spans of an attempt, so a trace shows each attempt of an operation with what it
//! ran and how it ended (README, "Traces").
//!
//! - `oprec.attempt`: one per attempt, from the moment a handler slot takes the claim until its
//!   outcome is written (the completer holds the span until then). Fields: `operation_id`,
//!   `kind`, `attempt`, `dependency`, `worker`, `code_version`, `traceparent`, and, recorded at
//!   the end, `outcome` (the attempt history's word, or `abandoned` when the lease was lost),
//!   `failure_class` and `written` (`applied`, or `stale` when the fence refused it).
//! - `oprec.still_needed` and `oprec.handler`: its children, around the kind's still-needed
//!   check and around the handler.
//! - `oprec.claim` and `oprec.complete`: one per batch (claims and completions are batched, and
//!   a batch serves many operations, which may belong to many traces): each is a root span of
//!   its own, and every attempt span follows from (in OpenTelemetry: links to) the claim batch
//!   that claimed it and the completion batch that wrote it. The completion span covers the
//!   store call; the claim span is made when the claim returned, only for a batch that claimed
//!   something, with the call's duration as `took_ms` (an idle worker's empty polls make none).
//!
//! The parent of an attempt span is the producer's stored trace context (`traceparent`) when
//! there is one and OpenTelemetry is built in (feature `otel`): the attempt is work the
//! producer's request asked for, so it belongs in that request's trace, and every attempt, days
//! apart, shows beside the enqueue. Without a stored context an attempt span is a root.

use oprec_core::{Claimed, Transition};
use tracing::Span;
use tracing::field::Empty;

/// The span of one attempt of `op`, following from the claim batch span `claim`.
pub(crate) fn attempt(
    op: &Claimed,
    worker: &str,
    code_version: Option<&str>,
    claim: &Span,
) -> Span {
    let span = tracing::info_span!(
        parent: None,
        "oprec.attempt",
        otel.kind = "consumer",
        operation_id = %op.id,
        kind = %op.kind,
        attempt = op.attempt,
        dependency = op.dependency.as_deref(),
        worker = worker,
        code_version = code_version,
        traceparent = op.traceparent.as_ref().map(|t| t.as_str()),
        outcome = Empty,
        failure_class = Empty,
        written = Empty,
        otel.status_code = Empty,
    );
    // The parent first: an OpenTelemetry span's parent is fixed once it starts.
    #[cfg(feature = "otel")]
    if let Some(parent) = &op.traceparent {
        crate::otel::set_parent(&span, parent);
    }
    span.follows_from(claim);
    span
}

/// Records how the attempt ended, as the policy decided it; the span of a failed attempt
/// ([`Transition::failed_attempt`], the rule the counters follow) or of a vanished one has the
/// OpenTelemetry status error (a release, or a cancel because the work was no longer needed, is
/// no failure of the attempt).
pub(crate) fn record_transition(span: &Span, t: &Transition) {
    use oprec_core::AttemptOutcome as A;
    let outcome = t.attempt_outcome();
    span.record("outcome", outcome.as_str());
    if let Some(class) = t.failure_class() {
        span.record("failure_class", class.as_str());
    }
    if t.failed_attempt() || outcome == A::Vanished {
        span.record("otel.status_code", "error");
    }
}

/// Records an ending that no transition describes (`abandoned`: the lease was lost;
/// `succeeded`: the handler's fenced transaction wrote it).
pub(crate) fn record_outcome(span: &Span, outcome: &str) {
    span.record("outcome", outcome);
}

/// The span of one batch of claims, made once the claim returned (`took`), and only when it
/// claimed something: an idle worker polls every second or so, and a root span per empty poll
/// would bury the traces that matter. `Span::none()` for an empty batch.
pub(crate) fn claim_batch(
    source: &'static str,
    requested: usize,
    claimed: usize,
    took: std::time::Duration,
) -> Span {
    if claimed == 0 {
        return Span::none();
    }
    let took_ms = took.as_secs_f64() * 1000.0;
    tracing::info_span!(parent: None, "oprec.claim", source, requested, claimed, took_ms)
}

/// The span of one batch of completions, which each written attempt's span follows from.
pub(crate) fn complete_batch(size: usize) -> Span {
    tracing::info_span!(parent: None, "oprec.complete", batch_size = size)
}
