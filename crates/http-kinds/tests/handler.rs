//! The HTTP handler against a real server on loopback (axum, in this process): what it sends
//! (the payload as JSON, the effect key as Idempotency-Key, the headers from the environment)
//! and what each answer, or the lack of one, becomes.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Json;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use oprec_core::{FailureClass, Outcome};
use oprec_http_kinds::{HttpHandler, KindsFile};
use oprec_runtime::Reconciled;
use serde_json::{Value, json};

/// What the server saw: (idempotency key, authorization, body) per POST.
#[derive(Default)]
struct Seen {
    posts: Mutex<Vec<(String, String, Value)>>,
    applied: Mutex<HashMap<String, String>>,
}

async fn ship(
    State(seen): State<Arc<Seen>>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    let header = |n: &str| {
        headers
            .get(n)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned()
    };
    let key = header("idempotency-key");
    seen.posts
        .lock()
        .unwrap()
        .push((key.clone(), header("authorization"), body.clone()));
    match body["scenario"].as_str().unwrap_or_default() {
        "ok" => {
            let id = format!("shp-{}", seen.applied.lock().unwrap().len() + 1);
            seen.applied.lock().unwrap().insert(key, id.clone());
            (
                StatusCode::CREATED,
                [("x-shipment-id", id.clone())],
                Json(json!({"id": id})),
            )
                .into_response()
        }
        "down" => (StatusCode::SERVICE_UNAVAILABLE, "maintenance").into_response(),
        "busy" => (
            StatusCode::TOO_MANY_REQUESTS,
            [("retry-after", "3")],
            "slow down",
        )
            .into_response(),
        "revoked" => (
            StatusCode::UNAUTHORIZED,
            Json(json!({"error": "API key revoked"})),
        )
            .into_response(),
        "malformed" => (
            StatusCode::BAD_REQUEST,
            Json(json!({"error": "postal_code must have 5 digits", "field": "postal_code"})),
        )
            .into_response(),
        "teapot" => StatusCode::IM_A_TEAPOT.into_response(),
        "conflict" => StatusCode::CONFLICT.into_response(),
        "slow" => {
            // The body is read and the effect applied; the answer comes too late.
            seen.applied.lock().unwrap().insert(key, "shp-slow".into());
            tokio::time::sleep(Duration::from_secs(3)).await;
            StatusCode::CREATED.into_response()
        }
        other => (StatusCode::BAD_REQUEST, format!("unknown scenario {other}")).into_response(),
    }
}

async fn by_key(State(seen): State<Arc<Seen>>, Path(key): Path<String>) -> Response {
    match seen.applied.lock().unwrap().get(&key) {
        Some(id) => Json(json!({"id": id})).into_response(),
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

async fn serve(seen: Arc<Seen>) -> String {
    let app = axum::Router::new()
        .route("/ship", post(ship))
        .route("/ship/by-key/{key}", get(by_key))
        .with_state(seen);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    base
}

fn env(name: &str) -> Option<String> {
    (name == "SHIPPER_TOKEN").then(|| "Bearer from-env".to_owned())
}

/// The handler of a kind posting to `url`, with `extra` lines in its `[kind.http]` table.
fn handler(url: &str, extra: &str) -> HttpHandler {
    let text = format!(
        r#"[[kind]]
name = "ship"
dependency = "shipper"
timeout = "1s"
max_attempts = 3
ladder = ["0s", "1s", "2s"]
jitter = "none"

[kind.http]
url = "{url}"
headers = {{ Authorization = "env:SHIPPER_TOKEN" }}
{extra}
"#
    );
    KindsFile::parse("kinds.toml", &text)
        .unwrap()
        .handler("ship", &env)
        .unwrap()
        .expect("declared")
}

#[tokio::test]
async fn each_answer_becomes_its_outcome() {
    let seen = Arc::new(Seen::default());
    let base = serve(seen.clone()).await;
    let h = handler(
        &format!("{base}/ship"),
        &format!(
            "reconcile_url = \"{base}/ship/by-key/{{effect_key}}\"\nremote_id = {{ json = \"id\" }}\n\
             [kind.http.status]\n409 = \"succeeded\""
        ),
    );
    let call = |scenario: &str, key: &str| {
        let h = h.clone();
        let payload = json!({"scenario": scenario, "postal_code": "10115"});
        let key = key.to_owned();
        async move { h.call(&key, &payload).await }
    };
    let failed = |o: Outcome| match o {
        Outcome::Failed(f) => f,
        other => panic!("not a failure: {other:?}"),
    };

    assert_eq!(
        call("ok", "oprec-1").await,
        Outcome::Succeeded {
            remote_id: Some("shp-1".into())
        }
    );
    assert_eq!(
        call("conflict", "oprec-1b").await,
        Outcome::Succeeded { remote_id: None },
        "409 overridden"
    );

    let f = failed(call("down", "oprec-2").await);
    assert_eq!(f.class, FailureClass::Transient, "{f}");
    assert!(
        f.error.summary.contains("answered 503 Service Unavailable"),
        "{f}"
    );

    let f = failed(call("busy", "oprec-3").await);
    assert_eq!(f.class, FailureClass::RateLimited, "{f}");
    assert_eq!(f.retry_after, Some(chrono::Duration::seconds(3)));

    let f = failed(call("revoked", "oprec-4").await);
    assert_eq!(f.class, FailureClass::Configuration, "{f}");
    assert!(f.error.summary.contains("API key revoked"), "{f}");

    let f = failed(call("malformed", "oprec-5").await);
    assert_eq!(f.class, FailureClass::Permanent, "{f}");
    assert!(
        f.error
            .summary
            .ends_with(": postal_code must have 5 digits"),
        "{f}"
    );
    assert_eq!(f.error.field.as_deref(), Some("postal_code"));

    let f = failed(call("teapot", "oprec-6").await);
    assert_eq!(
        f.class,
        FailureClass::Unknown,
        "a status nobody mapped: {f}"
    );

    let f = failed(call("slow", "oprec-7").await);
    assert_eq!(f.class, FailureClass::Unknown, "{f}");
    assert!(
        f.error.summary.contains("after the request was sent"),
        "{f}"
    );

    // The reconcile URL settles both ways.
    assert_eq!(
        h.reconcile("oprec-7").await,
        Reconciled::Applied {
            remote_id: Some("shp-slow".into())
        }
    );
    assert_eq!(h.reconcile("oprec-never").await, Reconciled::NotApplied);

    // Every request carried its effect key and the header from the environment.
    let posts = seen.posts.lock().unwrap().clone();
    let keys: Vec<&str> = posts.iter().map(|(k, _, _)| k.as_str()).collect();
    assert_eq!(
        keys,
        [
            "oprec-1", "oprec-1b", "oprec-2", "oprec-3", "oprec-4", "oprec-5", "oprec-6", "oprec-7"
        ]
    );
    assert!(posts.iter().all(|(_, auth, _)| auth == "Bearer from-env"));
    assert_eq!(
        posts[0].2["postal_code"], "10115",
        "the payload is the body"
    );
}

#[tokio::test]
async fn a_refused_connection_sent_nothing_and_is_transient() {
    // A port nobody listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let h = handler(&format!("http://127.0.0.1:{port}/ship"), "");
    let Outcome::Failed(f) = h.call("oprec-1", &json!({})).await else {
        panic!("a refused connection succeeded");
    };
    assert_eq!(f.class, FailureClass::Transient, "{f}");
    assert!(f.error.summary.contains("nothing was sent"), "{f}");
    // No reconcile URL: the question stays open for an operator.
    assert_eq!(h.reconcile("oprec-1").await, Reconciled::StillUnknown);
}

#[tokio::test]
async fn a_remote_id_from_a_header() {
    let seen = Arc::new(Seen::default());
    let base = serve(seen).await;
    let h = handler(
        &format!("{base}/ship"),
        "remote_id = { header = \"X-Shipment-Id\" }",
    );
    assert_eq!(
        h.call("k", &json!({"scenario": "ok"})).await,
        Outcome::Succeeded {
            remote_id: Some("shp-1".into())
        }
    );
}
