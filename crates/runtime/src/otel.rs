//! OpenTelemetry glue (feature `otel`): the stored W3C trace context as the parent of an
//! attempt's span, and the producer's current span as the trace context an enqueue stores. No
//! exporter here: the binary (or the application) installs the `tracing-opentelemetry` layer and
//! its exporter; without that layer these calls change nothing.

use opentelemetry::trace::{SpanContext, SpanId, TraceContextExt, TraceFlags, TraceId, TraceState};
use oprec_core::TraceParent;
use tracing::Span;
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// Makes the producer's context `parent` the OpenTelemetry parent of `span` (not yet started).
pub(crate) fn set_parent(span: &Span, parent: &TraceParent) {
    let (Ok(trace_id), Ok(span_id)) = (
        TraceId::from_hex(parent.trace_id()),
        SpanId::from_hex(parent.parent_id()),
    ) else {
        return;
    };
    let flags = if parent.sampled() {
        TraceFlags::SAMPLED
    } else {
        TraceFlags::default()
    };
    let remote = SpanContext::new(trace_id, span_id, flags, true, TraceState::default());
    // Fails only without the OpenTelemetry layer (nothing to export to) or for a disabled span.
    let _ = span.set_parent(opentelemetry::Context::new().with_remote_span_context(remote));
}

/// The W3C trace context of the current span, when an OpenTelemetry layer gives it one: what
/// an enqueue stores when its caller passed none.
pub fn current_traceparent() -> Option<TraceParent> {
    let cx = Span::current().context();
    let span = cx.span();
    let sc = span.span_context();
    if !sc.is_valid() {
        return None;
    }
    TraceParent::parse(&format!(
        "00-{}-{}-{:02x}",
        sc.trace_id(),
        sc.span_id(),
        sc.trace_flags().to_u8()
    ))
    .ok()
}
