//! The attempt spans a real worker makes, exported through OpenTelemetry (the SDK's in-memory
//! exporter): an operation that fails twice and succeeds on its third attempt shows as three
//! `oprec.attempt` spans in the producer's trace, each the child of the stored `traceparent`,
//! with its kind, attempt number, outcome and failure class, linked to its claim batch. And an
//! enqueue inside a traced request stores that request's context.

use std::sync::Arc;

use opentelemetry::trace::{TraceContextExt, TracerProvider as _};
use opentelemetry::{Key, Value};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use oprec_core::{EnqueueOptions, Status, TraceParent};
use oprec_e2e::Running;
use oprec_e2e::kinds::{Counters, registry};
use serde_json::json;
use tracing_opentelemetry::OpenTelemetrySpanExt;
use tracing_subscriber::layer::SubscriberExt;

const PRODUCER: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

fn attribute<'s>(span: &'s SpanData, key: &str) -> Option<&'s Value> {
    span.attributes
        .iter()
        .find(|kv| kv.key == Key::from(key.to_owned()))
        .map(|kv| &kv.value)
}

fn text(span: &SpanData, key: &str) -> String {
    attribute(span, key)
        .map(|v| v.as_str().into_owned())
        .unwrap_or_else(|| {
            panic!(
                "span {} has no attribute {key}: {:?}",
                span.name, span.attributes
            )
        })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_attempts_arrive_in_the_producers_trace() {
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    let subscriber = tracing_subscriber::registry()
        .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("oprec-test")));
    tracing::subscriber::set_global_default(subscriber).expect("the only subscriber");

    let rig = oprec_e2e::rigs::sqlite_memory().await;
    let counters = Arc::new(Counters::default());
    let reg = registry(counters.clone());
    let producer: TraceParent = PRODUCER.parse().unwrap();
    let id = rig
        .client(&reg)
        .enqueue(
            "t.flaky",
            json!({"fail_times": 2}),
            EnqueueOptions {
                traceparent: Some(producer.clone()),
                dependency: Some("flaky-provider".into()),
                ..EnqueueOptions::default()
            },
        )
        .await
        .unwrap()
        .id;
    assert_eq!(rig.get(id).await.operation.traceparent, Some(producer));

    let running = Running::start(rig.worker(&reg, |c| {
        c.worker_id = "w-otel".into();
        c.code_version = Some("v42".into());
    }));
    rig.wait_for(Status::Succeeded, 1, 30).await;
    running.stop().await;
    provider.force_flush().unwrap();

    let spans = exporter.get_finished_spans().unwrap();
    let mut attempts: Vec<&SpanData> = spans.iter().filter(|s| s.name == "oprec.attempt").collect();
    attempts.sort_by_key(|s| attribute(s, "attempt").map(|v| v.to_string()));
    assert_eq!(
        attempts.len(),
        3,
        "{:#?}",
        spans.iter().map(|s| &s.name).collect::<Vec<_>>()
    );
    for (i, s) in attempts.iter().enumerate() {
        assert_eq!(
            s.span_context.trace_id().to_string(),
            "4bf92f3577b34da6a3ce929d0e0e4736",
            "attempt {} is in the producer's trace",
            i + 1
        );
        assert_eq!(s.parent_span_id.to_string(), "00f067aa0ba902b7");
        assert!(s.parent_span_is_remote);
        assert_eq!(text(s, "attempt"), (i + 1).to_string());
        assert_eq!(text(s, "kind"), "t.flaky");
        assert_eq!(text(s, "dependency"), "flaky-provider");
        assert_eq!(text(s, "operation_id"), id.to_string());
        assert_eq!(text(s, "worker"), "w-otel");
        assert_eq!(text(s, "code_version"), "v42");
        assert_eq!(text(s, "written"), "applied");
        let (outcome, class) = if i < 2 {
            ("error", Some("transient"))
        } else {
            ("succeeded", None)
        };
        assert_eq!(text(s, "outcome"), outcome);
        assert_eq!(
            matches!(s.status, opentelemetry::trace::Status::Error { .. }),
            i < 2,
            "attempt {}: status {:?}",
            i + 1,
            s.status
        );
        assert_eq!(
            attribute(s, "failure_class").map(|v| v.as_str().into_owned()),
            class.map(str::to_owned)
        );
        // Linked to the claim batch that claimed it and the completion batch that wrote it.
        let linked: Vec<_> = s.links.iter().map(|l| l.span_context.span_id()).collect();
        for batch in ["oprec.claim", "oprec.complete"] {
            assert!(
                spans
                    .iter()
                    .any(|b| b.name == batch && linked.contains(&b.span_context.span_id())),
                "attempt {} links to no {batch} span",
                i + 1
            );
        }
        // The handler runs in a child span of the attempt.
        assert!(
            spans
                .iter()
                .any(|h| h.name == "oprec.handler" && h.parent_span_id == s.span_context.span_id()),
            "attempt {} has no handler span",
            i + 1
        );
    }

    // An enqueue inside a traced request, with no traceparent given, runs in an `oprec.enqueue`
    // span under the request's and stores that span's context: the trace shows the request, its
    // enqueue, and the attempts under the enqueue.
    let request = tracing::info_span!("producer.request");
    let stored = {
        let client = rig.client(&reg);
        let enqueued = tracing::Instrument::instrument(
            async {
                client
                    .enqueue("t.noop", json!({}), EnqueueOptions::default())
                    .await
            },
            request.clone(),
        )
        .await
        .unwrap();
        rig.get(enqueued.id).await.operation.traceparent
    };
    let cx = request.context();
    let expected = cx.span().span_context().clone();
    let stored = stored.expect("the enqueue's context is stored");
    assert_eq!(stored.trace_id(), expected.trace_id().to_string());
    provider.force_flush().unwrap();
    let spans = exporter.get_finished_spans().unwrap();
    let enqueue = spans
        .iter()
        .find(|s| s.name == "oprec.enqueue" && s.parent_span_id == expected.span_id())
        .expect("an oprec.enqueue span under the request");
    assert_eq!(
        stored.parent_id(),
        enqueue.span_context.span_id().to_string()
    );
    assert_eq!(text(enqueue, "kind"), "t.noop");
}
