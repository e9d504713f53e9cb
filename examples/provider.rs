//! A kind that calls an HTTP provider, and what each of the provider's failures becomes.
//!
//! The example starts a small simulated shipping provider on 127.0.0.1 (axum) that answers
//! `POST /shipments` with 503, 429 + Retry-After, 401 (rejected credentials), 400 (malformed
//! request), or records the shipment and then answers too late (a timeout after the write). The
//! kind sends its effect key as the `Idempotency-Key` header (the provider deduplicates on it),
//! records the provider's shipment id with `ctx.set_remote_id`, maps every response onto a
//! failure class with a classifier, and, after an unknown outcome, reconciles by looking the
//! shipment up on the provider by its idempotency key. Run it with:
//!
//! ```text
//! cargo run -p oprec --example provider
//! ```

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Json;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use oprec::sqlite::SqliteStore;
use oprec::store::OperationGetParams;
use oprec::{
    Client, EnqueueOptions, Failure, FailureClass, FullStore, Kind, Ladder, MemoryTransport,
    OperationError, OperationId, Reconciled, Registry, RetryPolicy, Status, Store, Worker,
    WorkerConfig,
};
use serde::{Deserialize, Serialize};
use serde_json::json;
use tokio_util::sync::CancellationToken;

// ---------------------------------------------------------------------------------------------
// The simulated provider. It reads the request's `scenario` field to decide how to misbehave.

const TOKEN: &str = "Bearer good-token";

#[derive(Default)]
struct Provider {
    /// Shipments by idempotency key: the provider's record of effects.
    shipments: Mutex<HashMap<String, String>>,
    /// POSTs seen per idempotency key.
    posts: Mutex<HashMap<String, u32>>,
}

impl Provider {
    /// Creates the shipment for `key`, or returns the one that key already created.
    fn create(&self, key: &str) -> (StatusCode, String) {
        let mut s = self.shipments.lock().unwrap();
        if let Some(id) = s.get(key) {
            return (StatusCode::OK, id.clone());
        }
        let id = format!("shp-{}", s.len() + 1);
        s.insert(key.to_owned(), id.clone());
        (StatusCode::CREATED, id)
    }
}

async fn post_shipment(
    State(p): State<Arc<Provider>>,
    headers: HeaderMap,
    Json(body): Json<Shipment>,
) -> Response {
    let Some(key) = headers
        .get("idempotency-key")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
    else {
        return (StatusCode::BAD_REQUEST, "Idempotency-Key required").into_response();
    };
    let n = {
        let mut posts = p.posts.lock().unwrap();
        let n = posts.entry(key.clone()).or_default();
        *n += 1;
        *n
    };
    let authorized = headers.get("authorization").and_then(|v| v.to_str().ok()) == Some(TOKEN);
    match body.scenario.as_str() {
        _ if !authorized || body.scenario == "revoked" => (
            StatusCode::UNAUTHORIZED,
            Json(json!({"error": "API key revoked"})),
        )
            .into_response(),
        "flaky" if n == 1 => (StatusCode::SERVICE_UNAVAILABLE, "try again").into_response(),
        "busy" if n == 1 => (
            StatusCode::TOO_MANY_REQUESTS,
            [("retry-after", "1")],
            "slow down",
        )
            .into_response(),
        "malformed" => (
            StatusCode::BAD_REQUEST,
            Json(json!({"error": "postal_code must have 5 digits", "field": "postal_code"})),
        )
            .into_response(),
        "slow" => {
            // The write happens, then the answer comes too late for the caller.
            let (status, id) = p.create(&key);
            tokio::time::sleep(Duration::from_millis(1500)).await;
            (status, Json(json!({"id": id}))).into_response()
        }
        _ => {
            let (status, id) = p.create(&key);
            (status, Json(json!({"id": id}))).into_response()
        }
    }
}

async fn get_shipment_by_key(State(p): State<Arc<Provider>>, Path(key): Path<String>) -> Response {
    match p.shipments.lock().unwrap().get(&key) {
        Some(id) => Json(json!({"id": id})).into_response(),
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

async fn start_provider(p: Arc<Provider>) -> anyhow::Result<String> {
    let app = axum::Router::new()
        .route("/shipments", post(post_shipment))
        .route("/shipments/by-key/{key}", get(get_shipment_by_key))
        .with_state(p);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let base = format!("http://{}", listener.local_addr()?);
    tokio::spawn(async move { axum::serve(listener, app).await });
    Ok(base)
}

// ---------------------------------------------------------------------------------------------
// The client side: the kind, its error type and its classifier.

/// The payload.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct Shipment {
    scenario: String,
    postal_code: String,
}

/// What a call to the provider can end in, before classification.
#[derive(Debug)]
enum ProviderError {
    /// The provider answered with an error status.
    Status {
        status: u16,
        retry_after: Option<u64>,
        body: String,
    },
    /// No answer in time; the request may have been written.
    Timeout,
    /// Could not connect: nothing was sent.
    Connect(String),
    /// Anything else.
    Other(String),
}

impl std::fmt::Display for ProviderError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ProviderError::Status { status, body, .. } => write!(f, "HTTP {status}: {body}"),
            ProviderError::Timeout => f.write_str("timed out waiting for the answer"),
            ProviderError::Connect(e) => write!(f, "connection failed: {e}"),
            ProviderError::Other(e) => f.write_str(e),
        }
    }
}

impl std::error::Error for ProviderError {}

/// The classifier: every response the provider can give, onto a failure class.
fn classify(e: &ProviderError) -> Failure {
    match e {
        ProviderError::Status {
            status: 429,
            retry_after,
            ..
        } => Failure::rate_limited(
            "provider rate limit (429)",
            retry_after.map(|s| chrono::Duration::seconds(s as i64)),
        ),
        ProviderError::Status {
            status: 401 | 403, ..
        } => Failure::configuration("provider rejected our credentials"),
        ProviderError::Status {
            status: 400 | 404 | 422,
            body,
            ..
        } => {
            let detail: serde_json::Value = serde_json::from_str(body).unwrap_or_default();
            let mut err = OperationError::new(format!(
                "provider refused the request: {}",
                detail["error"].as_str().unwrap_or(body)
            ))
            .next_action("correct the payload and enqueue a new operation");
            if let Some(field) = detail["field"].as_str() {
                err = err.field(field);
            }
            Failure::permanent(err)
        }
        ProviderError::Status { status, .. } if *status >= 500 => {
            Failure::transient(format!("provider unavailable ({status})"))
        }
        ProviderError::Connect(e) => Failure::transient(format!("connection refused: {e}")),
        ProviderError::Timeout => Failure::unknown("timed out after the request was written"),
        other => Failure::unknown(other.to_string()),
    }
}

async fn create_shipment(
    http: &reqwest::Client,
    base: &str,
    effect_key: &str,
    s: &Shipment,
) -> Result<String, ProviderError> {
    let response = http
        .post(format!("{base}/shipments"))
        .header("authorization", TOKEN)
        .header("idempotency-key", effect_key)
        .json(s)
        .send()
        .await
        .map_err(|e| {
            if e.is_timeout() {
                ProviderError::Timeout
            } else if e.is_connect() {
                ProviderError::Connect(e.to_string())
            } else {
                ProviderError::Other(e.to_string())
            }
        })?;
    let status = response.status().as_u16();
    if response.status().is_success() {
        let body: serde_json::Value = response
            .json()
            .await
            .map_err(|e| ProviderError::Other(e.to_string()))?;
        return body["id"]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| ProviderError::Other("no id in the answer".into()));
    }
    let retry_after = response
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok());
    let body = response.text().await.unwrap_or_default();
    Err(ProviderError::Status {
        status,
        retry_after,
        body,
    })
}

fn shipment_kind(http: reqwest::Client, base: String) -> anyhow::Result<Kind> {
    let policy = RetryPolicy::builder()
        .timeout(chrono::Duration::seconds(10))
        .max_attempts(4)
        .give_up_after(chrono::Duration::hours(1))
        .external_io(Ladder::schedule_secs(&[0, 1, 2, 4]))
        .jitter(oprec::Jitter::None)
        .build()?;
    let (h, b) = (http.clone(), base.clone());
    let kind = Kind::new("shipment.create", policy, move |ctx, s: Shipment| {
        let (http, base) = (h.clone(), b.clone());
        async move {
            let id = match create_shipment(&http, &base, ctx.effect_key(), &s).await {
                Ok(id) => id,
                Err(e) => {
                    println!(
                        "  {:<9} attempt {}: {e} -> {}",
                        s.scenario,
                        ctx.attempt(),
                        classify(&e).class
                    );
                    // The kind's classifier below turns it into its failure class.
                    return Err(e.into());
                }
            };
            println!(
                "  {:<9} attempt {}: POST /shipments -> {id} (succeeded; remote id recorded)",
                s.scenario,
                ctx.attempt()
            );
            ctx.set_remote_id(id).await?;
            Ok(())
        }
    })
    .dependency("shipping-provider")
    .classifier(|e| match e.downcast_ref::<ProviderError>() {
        Some(pe) => classify(pe),
        None => Failure::unknown(format!("{e:#}")),
    })
    .reconcile(move |ctx, s: Shipment| {
        let (http, base) = (http.clone(), base.clone());
        async move {
            let url = format!("{base}/shipments/by-key/{}", ctx.effect_key());
            let found = match http.get(url).send().await {
                Ok(r) if r.status() == reqwest::StatusCode::NOT_FOUND => Reconciled::NotApplied,
                Ok(r) if r.status().is_success() => match r.json::<serde_json::Value>().await {
                    Ok(v) => Reconciled::Applied {
                        remote_id: v["id"].as_str().map(str::to_owned),
                    },
                    Err(_) => Reconciled::StillUnknown,
                },
                _ => Reconciled::StillUnknown,
            };
            println!(
                "  {:<9} reconcile: GET /shipments/by-key/<effect key> -> {found:?}",
                s.scenario
            );
            found
        }
    });
    Ok(kind)
}

// ---------------------------------------------------------------------------------------------

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    // reqwest is built with rustls but no crypto provider; plain http needs none, but building a
    // client wants one installed.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let provider = Arc::new(Provider::default());
    let base = start_provider(provider.clone()).await?;
    println!("simulated provider at {base}");

    let dir = tempfile::tempdir()?;
    let url = format!(
        "sqlite://{}?mode=rwc",
        dir.path().join("provider.db").display()
    );
    let store = SqliteStore::connect(&url).await?;
    store.migrate().await?;
    let store: Arc<dyn FullStore> = Arc::new(store);

    // The client gives up on an answer after 500 ms: the "slow" scenario answers after 1.5 s.
    let http = reqwest::Client::builder()
        .timeout(Duration::from_millis(500))
        .build()?;
    let registry = Arc::new(Registry::new().register(shipment_kind(http, base)?));
    let transport = Arc::new(MemoryTransport::new());
    let client = Client::new(store.clone(), Some(transport.clone()), registry.clone());

    // (scenario, the status and failure class it must end in)
    let scenarios = [
        ("ok", Status::Succeeded, None),
        ("flaky", Status::Succeeded, Some(FailureClass::Transient)),
        ("busy", Status::Succeeded, Some(FailureClass::RateLimited)),
        ("revoked", Status::Held, Some(FailureClass::Configuration)),
        ("malformed", Status::Dead, Some(FailureClass::Permanent)),
        ("slow", Status::Succeeded, Some(FailureClass::Unknown)),
    ];
    let mut ids: Vec<(&str, OperationId, Status, Option<FailureClass>)> = Vec::new();
    for (scenario, status, class) in scenarios {
        let s = Shipment {
            scenario: scenario.into(),
            postal_code: "10115".into(),
        };
        let op = client
            .enqueue("shipment.create", s, EnqueueOptions::default())
            .await?;
        ids.push((scenario, op.id, status, class));
    }
    println!("enqueued {} shipments; requests:", ids.len());

    let mut config = WorkerConfig {
        idle_wait: Duration::from_millis(100),
        ..WorkerConfig::default()
    };
    config.scheduler.interval = Duration::from_millis(100);
    config.scheduler.rewake_after = chrono::Duration::milliseconds(500);
    config.reconciler.interval = Duration::from_millis(200);
    let stop = CancellationToken::new();
    let running = tokio::spawn(
        Worker::new(store.clone(), Some(transport), registry, config).run(stop.clone()),
    );

    // Wait until nothing is pending, running or reconciling any more.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let mut settled = true;
        for (_, id, _, _) in &ids {
            let o = store
                .operation_get(OperationGetParams { id: *id })
                .await?
                .expect("exists")
                .operation;
            settled &= matches!(o.status, Status::Succeeded | Status::Dead | Status::Held);
        }
        if settled || tokio::time::Instant::now() > deadline {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    stop.cancel();
    running.await?;

    println!("\nwhere each operation ended:");
    let mut wrong = Vec::new();
    for (scenario, id, want_status, want_class) in &ids {
        let d = store
            .operation_get(OperationGetParams { id: *id })
            .await?
            .expect("exists");
        let o = &d.operation;
        // The class of the first failure (the last one is cleared or kept, depending on the end).
        let first_class = d.attempts.iter().find_map(|a| a.failure_class);
        let mut line = format!(
            "  {scenario:<9} {} after {} attempt(s)",
            o.status, o.attempt
        );
        if let Some(c) = first_class {
            line += &format!(", met {c}");
        }
        if let Some(r) = &o.remote_id {
            line += &format!(", remote id {r}");
        }
        if let Some(e) = o
            .last_error
            .as_ref()
            .filter(|_| o.status != Status::Succeeded)
        {
            line += &format!("; last error: {e}");
        }
        println!("{line}");
        if o.status != *want_status || first_class != *want_class {
            wrong.push(format!(
                "{scenario}: wanted {want_status} after {want_class:?}, got {} after {first_class:?}",
                o.status
            ));
        }
        if o.status == Status::Succeeded && o.remote_id.is_none() {
            wrong.push(format!("{scenario}: succeeded without a remote id"));
        }
    }
    let shipments = provider.shipments.lock().unwrap().len();
    let posts: u32 = provider.posts.lock().unwrap().values().sum();
    println!(
        "provider: {posts} POSTs, {shipments} shipments created (one per successful operation)"
    );
    anyhow::ensure!(
        wrong.is_empty(),
        "unexpected outcomes:\n{}",
        wrong.join("\n")
    );
    anyhow::ensure!(
        shipments == 4,
        "expected 4 shipments, the provider has {shipments}"
    );
    Ok(())
}
