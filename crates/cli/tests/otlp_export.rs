//! OTLP export from the binary built with `--features otel` (scripts/test runs it so): a worker
//! pointed at a local receiver by `OTEL_EXPORTER_OTLP_ENDPOINT` posts its spans to
//! `/v1/traces` as HTTP/protobuf, under the service `OTEL_SERVICE_NAME`, with the attempts in the
//! trace of the `traceparent` given at enqueue; without the variable it posts nothing.
#![cfg(feature = "otel")]

mod common;

use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Bytes;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use common::Oprec;

const TP: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

type Posts = Arc<Mutex<Vec<(String, Vec<u8>)>>>;

async fn receive(
    axum::extract::State(posts): axum::extract::State<Posts>,
    headers: HeaderMap,
    body: Bytes,
) -> StatusCode {
    let kind = headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    posts.lock().unwrap().push((kind, body.to_vec()));
    StatusCode::OK
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

#[test]
fn a_worker_exports_its_attempt_spans_over_otlp_http() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let posts: Posts = Arc::default();
    let listener = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let endpoint = format!("http://{}", listener.local_addr().unwrap());
    let app = Router::new()
        .route("/v1/traces", post(receive))
        .with_state(posts.clone());
    rt.spawn(async move { axum::serve(listener, app).await });

    let o = Oprec::migrated();
    let worker = [
        "--transport",
        "poll",
        "worker",
        "--demo",
        "--exit-when-idle",
    ];
    // Without the endpoint: nothing is exported.
    o.enqueue("demo.noop", "{}");
    o.run(&worker).ok();
    assert!(posts.lock().unwrap().is_empty());

    o.run(&[
        "enqueue",
        "--kind",
        "demo.flaky",
        "--payload",
        r#"{"fail_times": 1, "class": "transient"}"#,
        "--traceparent",
        TP,
    ])
    .ok();
    o.run_with_env(
        &worker,
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", Some(endpoint.as_str())),
            ("OTEL_SERVICE_NAME", Some("oprec-under-test")),
        ],
    )
    .ok();
    let posts = posts.lock().unwrap();
    assert!(!posts.is_empty(), "nothing posted to /v1/traces");
    assert!(
        posts
            .iter()
            .all(|(kind, _)| kind == "application/x-protobuf"),
        "{:?}",
        posts.iter().map(|(k, _)| k).collect::<Vec<_>>()
    );
    let body: Vec<u8> = posts.iter().flat_map(|(_, b)| b.clone()).collect();
    for text in [
        "oprec-under-test",
        "oprec.attempt",
        "oprec.handler",
        "oprec.complete",
    ] {
        assert!(contains(&body, text.as_bytes()), "no {text} in the export");
    }
    // The attempts are in the producer's trace, children of its span.
    assert!(contains(&body, &hex("4bf92f3577b34da6a3ce929d0e0e4736")));
    assert!(contains(&body, &hex("00f067aa0ba902b7")));
}
