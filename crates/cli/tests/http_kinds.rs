//! Kinds declared in a file, run by a real `oprec worker --kinds-file` process against a provider
//! this test serves on loopback (axum, in the test process): one that fails then recovers,
//! answers 429 with Retry-After (honoured, and capped), refuses credentials (401) until they are
//! repaired, refuses a malformed request (400) naming its field, and reads a request then answers
//! too late (unknown, settled by the reconcile URL either way, or left reconciling for a kind
//! without one), and a kind whose provider refuses connections. On PostgreSQL with Redis, with
//! RabbitMQ, and poll-only: the statuses, failure classes, attempts, held and reconciling
//! outcomes, the Idempotency-Key of every request, and a secret that reaches the provider and
//! nothing else. Then the load errors and the enqueue side, through the binary.

mod common;
mod rig;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Json;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};

use common::Oprec;
use rig::{Rig, RigKind, poll};

/// The secret the worker's environment holds; it must reach the provider and nowhere else.
const TOKEN: &str = "tok_Zq81-very-secret";

/// One request the provider received.
#[derive(Clone, Debug)]
struct Post {
    path: &'static str,
    key: String,
    authorization: String,
    scenario: String,
}

/// The provider's state: what it received, the effects it applied (by idempotency key), and
/// whether the credentials have been repaired.
#[derive(Default)]
struct Seen {
    posts: Mutex<Vec<Post>>,
    shipments: Mutex<HashMap<String, String>>,
    repaired: AtomicBool,
}

impl Seen {
    /// Applies the shipment of `key` once (a key seen again gets the same shipment).
    fn create(&self, key: &str) -> (StatusCode, String) {
        let mut s = self.shipments.lock().unwrap();
        if let Some(id) = s.get(key) {
            return (StatusCode::OK, id.clone());
        }
        let id = format!("shp-{}", s.len() + 1);
        s.insert(key.to_owned(), id.clone());
        (StatusCode::CREATED, id)
    }

    /// Records a request; how many requests its key has made so far, this one included.
    fn record(&self, path: &'static str, headers: &HeaderMap, body: &Value) -> (String, usize) {
        let header = |n: &str| {
            headers
                .get(n)
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
                .to_owned()
        };
        let key = header("idempotency-key");
        let mut posts = self.posts.lock().unwrap();
        posts.push(Post {
            path,
            key: key.clone(),
            authorization: header("authorization"),
            scenario: body["scenario"].as_str().unwrap_or_default().to_owned(),
        });
        let n = posts.iter().filter(|p| p.key == key).count();
        (key, n)
    }
}

fn shipped(status: StatusCode, id: String) -> Response {
    (status, Json(json!({"id": id}))).into_response()
}

/// `POST /ship`: what each scenario does on the n-th request of its key.
async fn ship(
    State(seen): State<Arc<Seen>>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    let (key, n) = seen.record("/ship", &headers, &body);
    if headers.get("authorization").and_then(|v| v.to_str().ok())
        != Some(&format!("Bearer {TOKEN}"))
    {
        return (StatusCode::UNAUTHORIZED, "no such token").into_response();
    }
    match body["scenario"].as_str().unwrap_or_default() {
        "flaky" if n <= 2 => (StatusCode::SERVICE_UNAVAILABLE, "maintenance").into_response(),
        "busy" if n == 1 => (
            StatusCode::TOO_MANY_REQUESTS,
            [("retry-after", "1")],
            "slow down",
        )
            .into_response(),
        // Asks for an hour; the kind caps it at 2 s.
        "greedy" if n == 1 => (
            StatusCode::TOO_MANY_REQUESTS,
            [("retry-after", "3600")],
            "come back in an hour",
        )
            .into_response(),
        "revoked" if !seen.repaired.load(Ordering::SeqCst) => (
            StatusCode::UNAUTHORIZED,
            Json(json!({"error": "API key revoked"})),
        )
            .into_response(),
        "malformed" => (
            StatusCode::BAD_REQUEST,
            Json(json!({"error": "postal_code must have 5 digits", "field": "postal_code"})),
        )
            .into_response(),
        // The body was read and the shipment made; the answer comes after the caller gave up.
        "slow" if n == 1 => {
            let (status, id) = seen.create(&key);
            tokio::time::sleep(Duration::from_secs(4)).await;
            shipped(status, id)
        }
        // The body was read, nothing was made, and the answer comes too late.
        "lost" if n == 1 => {
            tokio::time::sleep(Duration::from_secs(4)).await;
            (StatusCode::SERVICE_UNAVAILABLE, "gave up").into_response()
        }
        _ => {
            let (status, id) = seen.create(&key);
            shipped(status, id)
        }
    }
}

/// `GET /ship/by-key/{key}`: the reconcile URL.
async fn by_key(State(seen): State<Arc<Seen>>, Path(key): Path<String>) -> Response {
    match seen.shipments.lock().unwrap().get(&key) {
        Some(id) => Json(json!({"id": id})).into_response(),
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

/// `POST /mail`: a kind with no reconcile URL, whose remote id is a header.
async fn mail(
    State(seen): State<Arc<Seen>>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    let (key, _) = seen.record("/mail", &headers, &body);
    if body["scenario"] == "slow" {
        tokio::time::sleep(Duration::from_secs(3)).await;
    }
    (
        StatusCode::ACCEPTED,
        [("x-message-id", format!("msg-{key}"))],
    )
        .into_response()
}

/// The provider, served by a runtime of its own while the test's thread runs the binary.
struct Provider {
    seen: Arc<Seen>,
    base: String,
    _rt: tokio::runtime::Runtime,
}

impl Provider {
    fn start() -> Provider {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        let seen = Arc::new(Seen::default());
        let app = axum::Router::new()
            .route("/ship", post(ship))
            .route("/ship/by-key/{key}", get(by_key))
            .route("/mail", post(mail))
            .with_state(seen.clone());
        let listener = rt
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .expect("bind");
        let base = format!("http://{}", listener.local_addr().unwrap());
        rt.spawn(async move { axum::serve(listener, app).await });
        Provider {
            seen,
            base,
            _rt: rt,
        }
    }

    fn posts(&self) -> Vec<Post> {
        self.seen.posts.lock().unwrap().clone()
    }
}

/// The kinds file: two kinds on the provider, one on a port nobody listens on.
fn kinds_file(base: &str, refused_port: u16) -> String {
    format!(
        r#"[[kind]]
name = "shipment.create"
dependency = "shipper"
timeout = "2s"
max_attempts = 5
give_up_after = "1h"
ladder = ["0s", "1s", "1s", "1s", "1s"]
jitter = "none"
rate_limit_max = "2s"

[kind.http]
url = "{base}/ship"
reconcile_url = "{base}/ship/by-key/{{effect_key}}"
headers = {{ Authorization = "env:SHIPPER_AUTH" }}
remote_id = {{ json = "id" }}

[[kind]]
name = "receipt.send"
dependency = "mailer"
timeout = "1s"
max_attempts = 2
ladder = ["0s", "1s"]
jitter = "none"

[kind.http]
url = "{base}/mail"
headers = {{ Authorization = "env:SHIPPER_AUTH" }}
remote_id = {{ header = "X-Message-Id" }}

[[kind]]
name = "ping.refused"
dependency = "nowhere"
timeout = "1s"
max_attempts = 2
ladder = ["0s", "1s"]
jitter = "none"

[kind.http]
url = "http://127.0.0.1:{refused_port}/ping"
"#
    )
}

/// The file's kinds, for deleting their RabbitMQ queues.
const KINDS: [&str; 3] = ["shipment.create", "receipt.send", "ping.refused"];

/// Deletes the kind queues a RabbitMQ rig made for the file's kinds (the rig deletes the demo
/// kinds' and the exchange) when dropped, passed or failed.
struct KindQueues(Option<(String, String)>);

impl Drop for KindQueues {
    fn drop(&mut self) {
        if let Some((server, prefix)) = &self.0 {
            for kind in KINDS {
                common::delete_amqp_queue(server, &format!("{prefix}.{kind}"));
            }
        }
    }
}

/// (status, attempts, last failure class, remote id, terminal reason, last error) of `id`.
struct Seen1 {
    status: String,
    attempts: Vec<(String, String)>,
    class: Option<String>,
    remote_id: Option<String>,
    reason: Option<String>,
    error: Value,
}

fn show(rig: &Rig, id: &str) -> Seen1 {
    let d = rig.oprec_json(&["ops", "show", id, "--json"]);
    let o = &d["operation"];
    let text = |v: &Value| v.as_str().map(str::to_owned);
    Seen1 {
        status: text(&o["status"]).unwrap_or_default(),
        attempts: d["attempts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| {
                (
                    text(&a["outcome"]).unwrap_or_default(),
                    text(&a["failure_class"]).unwrap_or_default(),
                )
            })
            .collect(),
        class: text(&o["last_failure_class"]),
        remote_id: text(&o["remote_id"]),
        reason: text(&o["terminal_reason"]),
        error: o["last_error"].clone(),
    }
}

fn lifecycle(kind: RigKind) {
    let provider = Provider::start();
    let rig = Rig::new(kind, "http kinds lifecycle");
    let _queues = KindQueues(rig.queue.clone());
    let file = rig.dir().join("kinds.toml");
    std::fs::write(&file, kinds_file(&provider.base, common::free_port())).unwrap();
    let file = file.to_str().unwrap().to_owned();

    // The producer side reads no secret: its environment has none.
    let enqueue = |kind: &str, scenario: &str| -> String {
        let payload = json!({"scenario": scenario, "postal_code": "10115"}).to_string();
        let v = rig.oprec_json(&[
            "enqueue",
            "--kinds-file",
            &file,
            "--kind",
            kind,
            "--payload",
            &payload,
            "--json",
        ]);
        v["id"].as_str().expect("id").to_owned()
    };
    let ship = [
        "ok",
        "flaky",
        "busy",
        "greedy",
        "revoked",
        "malformed",
        "slow",
        "lost",
    ];
    let ids: HashMap<&str, String> = ship
        .iter()
        .map(|s| (*s, enqueue("shipment.create", s)))
        .collect();
    let receipt_ok = enqueue("receipt.send", "ok");
    let receipt_slow = enqueue("receipt.send", "slow");
    let refused = enqueue("ping.refused", "ok");

    let mut worker = rig.spawn_with_env(
        "worker",
        &[
            "worker",
            "--kinds-file",
            &file,
            "--rewake-after",
            "1s",
            "--reconcile-interval",
            "1s",
        ],
        &[("SHIPPER_AUTH", &format!("Bearer {TOKEN}"))],
    );
    worker.wait_until_up();

    // Settled: nothing pending or running, and only the receipt without a reconcile URL still
    // reconciling.
    let settled = poll(Duration::from_secs(60), Duration::from_millis(250), || {
        let open = rig.scalar(
            "SELECT count(*) FROM operations WHERE status IN ('pending', 'running') \
             OR (status = 'reconciling' AND kind <> 'receipt.send')",
        );
        (open == 0).then_some(())
    });
    assert!(
        settled.is_some(),
        "not settled in 60 s: {:?}\n{}",
        rig.statuses(),
        rig.dump()
    );

    let op = |s: &str| show(&rig, &ids[s]);
    let classes = |o: &Seen1| -> Vec<String> { o.attempts.iter().map(|a| a.1.clone()).collect() };

    let ok = op("ok");
    assert_eq!((ok.status.as_str(), ok.attempts.len()), ("succeeded", 1));
    assert!(
        ok.remote_id
            .as_deref()
            .is_some_and(|r| r.starts_with("shp-")),
        "{:?}",
        ok.remote_id
    );

    // Fails, then recovers: two transient failures on the ladder, then success.
    let flaky = op("flaky");
    assert_eq!(flaky.status, "succeeded");
    assert_eq!(classes(&flaky), ["transient", "transient", ""]);

    // 429 with Retry-After: deferred to the provider's time, then success.
    let busy = op("busy");
    assert_eq!(busy.status, "succeeded");
    assert_eq!(classes(&busy), ["rate_limited", ""]);
    // An hour asked for, capped at the kind's rate_limit_max of 2 s.
    let greedy = op("greedy");
    assert_eq!(greedy.status, "succeeded", "capped, not an hour away");
    assert_eq!(classes(&greedy), ["rate_limited", ""]);

    // 401: held for the owner, one attempt, nothing retried meanwhile.
    let revoked = op("revoked");
    assert_eq!(revoked.status, "held");
    assert_eq!(revoked.class.as_deref(), Some("configuration"));
    assert_eq!(revoked.attempts.len(), 1);
    assert!(
        revoked.error["summary"]
            .as_str()
            .unwrap()
            .contains("shipper refused our credentials (API key revoked)"),
        "{}",
        revoked.error
    );

    // 400: dead at once, naming the body's error and field.
    let malformed = op("malformed");
    assert_eq!(malformed.status, "dead");
    assert_eq!(malformed.reason.as_deref(), Some("permanent"));
    assert_eq!(malformed.attempts.len(), 1);
    assert!(
        malformed.error["summary"]
            .as_str()
            .unwrap()
            .ends_with("answered 400 Bad Request: postal_code must have 5 digits"),
        "{}",
        malformed.error
    );
    assert_eq!(malformed.error["field"], "postal_code");

    // Read, applied, answered too late: unknown, then the reconcile URL finds it applied.
    let slow = op("slow");
    assert_eq!(slow.status, "succeeded");
    assert_eq!(classes(&slow), ["unknown"]);
    assert!(slow.remote_id.is_some(), "the reconcile URL's id is kept");
    // Read, not applied, answered too late: the reconcile URL finds nothing, and it runs again.
    let lost = op("lost");
    assert_eq!(lost.status, "succeeded");
    assert_eq!(classes(&lost), ["unknown", ""]);

    // No reconcile URL: an unknown outcome waits for a person, no blind retry.
    let waiting = show(&rig, &receipt_slow);
    assert_eq!(waiting.status, "reconciling");
    assert_eq!(waiting.class.as_deref(), Some("unknown"));
    assert_eq!(waiting.attempts.len(), 1);
    let receipt = show(&rig, &receipt_ok);
    assert_eq!(receipt.status, "succeeded");
    assert_eq!(
        receipt.remote_id.as_deref(),
        Some(format!("msg-oprec-{receipt_ok}").as_str()),
        "the remote id from the X-Message-Id header"
    );

    // Connection refused: nothing sent, transient, until the attempts run out.
    let refused = show(&rig, &refused);
    assert_eq!(refused.status, "dead");
    assert_eq!(refused.reason.as_deref(), Some("attempts_exhausted"));
    assert_eq!(classes(&refused), ["transient", "transient"]);
    assert!(
        refused.error["summary"]
            .as_str()
            .unwrap()
            .contains("nothing was sent"),
        "{}",
        refused.error
    );

    // The owner repairs the credentials and resumes the dependency: the held one runs again.
    provider.seen.repaired.store(true, Ordering::SeqCst);
    rig.oprec_ok(&[
        "resume",
        "--dependency",
        "shipper",
        "--reason",
        "key rotated",
    ]);
    let resumed = poll(Duration::from_secs(20), Duration::from_millis(250), || {
        (op("revoked").status == "succeeded").then_some(())
    });
    assert!(
        resumed.is_some(),
        "the held operation did not resume:\n{}",
        rig.dump()
    );
    assert_eq!(classes(&op("revoked")), ["configuration", ""]);

    // Every request carried its operation's effect key and the secret from the environment.
    let posts = provider.posts();
    for (scenario, id) in &ids {
        let key = format!("oprec-{id}");
        let mine: Vec<&Post> = posts
            .iter()
            .filter(|p| p.scenario == *scenario && p.path == "/ship")
            .collect();
        assert!(!mine.is_empty(), "{scenario}: no request");
        assert!(
            mine.iter().all(|p| p.key == key),
            "{scenario}: keys {:?}, expected {key}",
            mine.iter().map(|p| &p.key).collect::<Vec<_>>()
        );
    }
    let flaky_posts = posts.iter().filter(|p| p.scenario == "flaky").count();
    assert_eq!(flaky_posts, 3, "one request per attempt");
    assert!(
        posts
            .iter()
            .all(|p| p.authorization == format!("Bearer {TOKEN}")),
        "every request carries the header from the environment"
    );
    // The provider applied one shipment per succeeded shipment operation (the slow one once,
    // though asked about twice).
    assert_eq!(
        provider.seen.shipments.lock().unwrap().len(),
        ship.len() - 1
    );

    // The secret reached the provider and nothing else: not the worker's output, not the store.
    worker.sigterm();
    assert!(
        worker.wait_for_exit(Duration::from_secs(30)).is_some(),
        "the worker did not drain"
    );
    let logs = format!("{}{}", worker.stdout(), worker.stderr());
    assert!(logs.contains("3 kinds from"), "{logs}");
    assert!(
        !logs.contains(TOKEN),
        "the worker printed the secret:\n{logs}"
    );
    let stored = rig.scalar(&format!(
        "SELECT count(*) FROM operations o LEFT JOIN operation_attempts a ON a.operation_id = o.id \
         WHERE o::text LIKE '%{TOKEN}%' OR a::text LIKE '%{TOKEN}%'"
    ));
    assert_eq!(stored, 0, "the secret is in the store");
    rig.report(&format!("{} requests", posts.len()));
}

#[test]
fn lifecycle_on_postgres_with_redis() {
    lifecycle(RigKind::PostgresRedis);
}

#[test]
fn lifecycle_on_postgres_with_rabbitmq() {
    lifecycle(RigKind::PostgresAmqp);
}

#[test]
fn lifecycle_on_postgres_poll_only() {
    lifecycle(RigKind::PostgresPoll);
}

/// A file with one sound kind, lines numbered from 1, to break one line at a time.
const GOOD: &str = r#"[[kind]]
name = "shipment.create"
dependency = "shipper"
timeout = "10s"
max_attempts = 4
ladder = ["0s", "1m", "5m"]
jitter = "equal"

[kind.http]
url = "http://127.0.0.1:9/ship"
headers = { Authorization = "env:SHIPPER_AUTH" }
"#;

fn with_line(n: usize, line: &str) -> String {
    let mut lines: Vec<&str> = GOOD.lines().collect();
    lines[n - 1] = line;
    lines.join("\n") + "\n"
}

/// `oprec worker --kinds-file` on `text`, with SHIPPER_AUTH set as `auth`: exit 2 with one line
/// naming `at` (file:line:column) and saying `says`.
fn worker_refuses(text: &str, auth: Option<&str>, at: &str, says: &str) {
    let o = Oprec::migrated();
    std::fs::write(o.path("kinds.toml"), text).unwrap();
    let run = o.run_with_env(
        &[
            "--transport",
            "poll",
            "worker",
            "--kinds-file",
            "kinds.toml",
            "--exit-when-idle",
        ],
        &[("SHIPPER_AUTH", auth)],
    );
    run.bad_input(&format!("kinds.toml:{at}: "));
    run.bad_input(says);
}

#[test]
fn load_errors_name_the_line() {
    // A bad ladder: a zero wait before a retry.
    worker_refuses(
        &with_line(6, r#"ladder = ["0s", "0s", "5m"]"#),
        Some("Bearer x"),
        "6:10",
        "a kind that does external I/O needs a positive delay before every retry",
    );
    // An unknown field: a misspelt bound must not leave the kind unbounded.
    worker_refuses(
        &with_line(5, "max_atempts = 4"),
        Some("Bearer x"),
        "5:1",
        "unknown field `max_atempts`",
    );
    // A missing environment variable.
    worker_refuses(
        GOOD,
        None,
        "11:29",
        "header Authorization names the environment variable SHIPPER_AUTH, which is not set",
    );
    // A value in the file: refused without being echoed.
    let o = Oprec::migrated();
    std::fs::write(
        o.path("kinds.toml"),
        with_line(
            11,
            r#"headers = { Authorization = "Bearer sk_live_hunter2" }"#,
        ),
    )
    .unwrap();
    let run = o.run(&["worker", "--kinds-file", "kinds.toml"]);
    run.bad_input("kinds.toml:11:29: kind \"shipment.create\": header Authorization must name an environment variable");
    assert!(!run.stderr.contains("hunter2"), "{}", run.stderr);
    // A demo kind's name is taken.
    worker_refuses(
        &with_line(2, r#"name = "demo.noop""#),
        Some("Bearer x"),
        "2:8",
        "one of this binary's demo kinds",
    );
    // No file, no demo: nothing to run.
    Oprec::migrated()
        .run(&["worker"])
        .bad_input("nothing to run; pass --demo");
    Oprec::migrated()
        .run(&["worker", "--kinds-file", "nowhere.toml"])
        .bad_input("cannot read the kinds file nowhere.toml");
}

#[test]
fn enqueue_accepts_the_files_kinds_and_lists_them_when_refusing() {
    let o = Oprec::migrated();
    std::fs::write(o.path("kinds.toml"), GOOD).unwrap();
    // No secret needed to enqueue.
    let v = o
        .run(&[
            "enqueue",
            "--kinds-file",
            "kinds.toml",
            "--kind",
            "shipment.create",
            "--payload",
            "{\"order\": 42}",
            "--json",
        ])
        .json();
    let id = v["id"].as_str().unwrap();
    let op = o.show(id);
    assert_eq!(op["operation"]["kind"], "shipment.create");
    assert_eq!(
        op["operation"]["max_attempts"], 3,
        "the ladder's length bounds it"
    );
    assert_eq!(op["operation"]["dependency"], "shipper");
    // The demo kinds stay accepted beside the file's.
    o.run(&[
        "enqueue",
        "--kinds-file",
        "kinds.toml",
        "--kind",
        "demo.noop",
        "--payload",
        "{}",
    ])
    .ok();
    o.run(&[
        "enqueue",
        "--kinds-file",
        "kinds.toml",
        "--kind",
        "shipment.cancel",
        "--payload",
        "{}",
    ])
    .bad_input(
        "unknown kind \"shipment.cancel\"; accepted kinds: demo.crash, demo.effect, demo.flaky, \
         demo.noop, demo.slow; from kinds.toml: shipment.create",
    );
    o.run(&["enqueue", "--kind", "shipment.create", "--payload", "{}"])
        .bad_input("(--kinds-file FILE adds the kinds a file declares)");
    // A broken file is refused before anything is enqueued.
    std::fs::write(o.path("broken.toml"), with_line(7, r#"jitter = "lots""#)).unwrap();
    o.run(&[
        "enqueue",
        "--kinds-file",
        "broken.toml",
        "--kind",
        "shipment.create",
        "--payload",
        "{}",
    ])
    .bad_input("broken.toml:7:10: unknown jitter \"lots\"");
    assert_eq!(
        o.run(&["ops", "list", "--json"])
            .json()
            .as_array()
            .unwrap()
            .len(),
        2
    );
}
