//! What a worker tells the outside world, on SQLite: Prometheus metrics on `--metrics-listen`
//! (the stats figures, the worker's counters, the handler latency), and each promotion to dead
//! posted to `--dead-letter-webhook`, retried until the webhook accepts it.

mod background;
mod common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::http::StatusCode;
use axum::routing::post;
use axum::{Json, Router};
use background::Background;
use common::{Oprec, free_port, sample, scrape};
use serde_json::Value;

#[test]
fn the_worker_serves_prometheus_metrics() {
    let o = Oprec::migrated();
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let _worker = Background::start(
        &o,
        &[
            "--transport",
            "poll",
            "worker",
            "--demo",
            "--metrics-listen",
            &addr,
        ],
    );
    o.run(&[
        "enqueue",
        "--kind",
        "demo.noop",
        "--payload",
        "{}",
        "--count",
        "5",
    ])
    .ok();
    o.enqueue("demo.flaky", r#"{"fail_times": 9, "class": "permanent"}"#);

    let began = Instant::now();
    let text = loop {
        if let Some(t) = scrape(port)
            && total(&t, "oprec_claims_total") == 6.0
            && sample(&t, r#"oprec_operations{status="succeeded"}"#) == Some(5.0)
        {
            break t;
        }
        assert!(
            began.elapsed() < Duration::from_secs(30),
            "no metrics with the work done: {:?}",
            scrape(port)
        );
        std::thread::sleep(Duration::from_millis(300));
    };
    for (series, want) in [
        (r#"oprec_operations{status="dead"}"#, 1.0),
        (r#"oprec_dead_operations{kind="demo.flaky"}"#, 1.0),
        (r#"oprec_dead_last_hour{kind="demo.flaky"}"#, 1.0),
        (
            r#"oprec_attempts_last_hour{dependency="demo-provider"}"#,
            6.0,
        ),
        ("oprec_attempts_per_success", 1.0),
        ("oprec_reconciling_operations", 0.0),
        ("oprec_oldest_eligible_overdue_seconds", 0.0),
        ("oprec_backlog_age_seconds", 0.0),
        (
            r#"oprec_attempts_succeeded_total{kind="demo.noop",dependency="demo-provider"}"#,
            5.0,
        ),
        (
            r#"oprec_attempts_failed_total{kind="demo.flaky",class="permanent",dependency="demo-provider"}"#,
            1.0,
        ),
        (
            r#"oprec_dead_promotions_total{kind="demo.flaky",class="permanent",dependency="demo-provider",reason="permanent"}"#,
            1.0,
        ),
        ("oprec_stale_claims_total", 0.0),
        ("oprec_wakeups_ignored_total", 0.0),
        ("oprec_garbage_frames_total", 0.0),
        ("oprec_vanished_attempts_total", 0.0),
        (
            r#"oprec_handler_duration_seconds_count{kind="demo.noop"}"#,
            5.0,
        ),
    ] {
        assert_eq!(sample(&text, series), Some(want), "{series}: {text}");
    }
    assert!(
        text.contains(r#"oprec_handler_duration_seconds_bucket{kind="demo.noop",le="0.005"}"#),
        "a histogram with buckets: {text}"
    );
    assert!(text.contains("# HELP oprec_claims_total"), "{text}");
}

/// The sum of every sample of `name`, whatever its labels.
fn total(text: &str, name: &str) -> f64 {
    series(text, name).iter().map(|(_, v)| v).sum()
}

/// Every sample of `name`: its labels (`{...}`, or empty) and value.
fn series(text: &str, name: &str) -> Vec<(String, f64)> {
    text.lines()
        .filter_map(|l| {
            let rest = l.strip_prefix(name)?;
            if !(rest.starts_with('{') || rest.starts_with(' ')) {
                return None;
            }
            let (labels, value) = rest.rsplit_once(' ')?;
            Some((labels.to_owned(), value.parse().ok()?))
        })
        .collect()
}

#[test]
fn the_worker_counters_carry_kind_class_and_dependency() {
    let o = Oprec::migrated();
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let _worker = Background::start(
        &o,
        &[
            "--transport",
            "poll",
            "worker",
            "--demo",
            "--demo-ladder",
            "0,1,1,1",
            "--metrics-listen",
            &addr,
        ],
    );
    o.run(&[
        "enqueue",
        "--kind",
        "demo.noop",
        "--payload",
        "{}",
        "--count",
        "4",
    ])
    .ok();
    // Fails twice as transient, then succeeds.
    o.enqueue("demo.flaky", r#"{"fail_times": 2, "class": "transient"}"#);

    let failed = r#"oprec_attempts_failed_total{kind="demo.flaky",class="transient",dependency="demo-provider"}"#;
    let began = Instant::now();
    let text = loop {
        if let Some(t) = scrape(port)
            && sample(&t, failed) == Some(2.0)
            && total(&t, "oprec_attempts_succeeded_total") == 5.0
        {
            break t;
        }
        assert!(
            began.elapsed() < Duration::from_secs(30),
            "no labelled failures: {:?}",
            scrape(port)
        );
        std::thread::sleep(Duration::from_millis(300));
    };
    // Every failure is the failing kind's, with its class: the succeeding kind leaks none.
    let failures = series(&text, "oprec_attempts_failed_total");
    assert_eq!(failures.len(), 1, "{failures:?}");
    for (series, want) in [
        (
            r#"oprec_claims_total{kind="demo.noop",dependency="demo-provider"}"#,
            4.0,
        ),
        (
            r#"oprec_claims_total{kind="demo.flaky",dependency="demo-provider"}"#,
            3.0,
        ),
        (
            r#"oprec_attempts_succeeded_total{kind="demo.noop",dependency="demo-provider"}"#,
            4.0,
        ),
        (
            r#"oprec_attempts_succeeded_total{kind="demo.flaky",dependency="demo-provider"}"#,
            1.0,
        ),
        (
            r#"oprec_completions_total{kind="demo.flaky",outcome="error",dependency="demo-provider"}"#,
            2.0,
        ),
        (
            r#"oprec_completions_total{kind="demo.flaky",outcome="succeeded",dependency="demo-provider"}"#,
            1.0,
        ),
    ] {
        assert_eq!(sample(&text, series), Some(want), "{series}: {text}");
    }
    assert!(
        series(&text, "oprec_dead_promotions_total").is_empty(),
        "{text}"
    );
    assert!(
        text.contains("# HELP oprec_attempts_failed_total"),
        "{text}"
    );
}

/// What the webhook received, and how many posts it refuses before accepting.
#[derive(Default)]
struct Hook {
    posts: Mutex<Vec<Value>>,
    refuse_first: Mutex<u32>,
}

async fn receive(
    axum::extract::State(hook): axum::extract::State<Arc<Hook>>,
    Json(body): Json<Value>,
) -> StatusCode {
    hook.posts.lock().unwrap().push(body);
    let mut refuse = hook.refuse_first.lock().unwrap();
    if *refuse > 0 {
        *refuse -= 1;
        StatusCode::SERVICE_UNAVAILABLE
    } else {
        StatusCode::OK
    }
}

/// Serves `hook` on a free local port at `path`; the runtime serving it, kept alive by the
/// caller, and the URL to post to.
fn serve_hook(hook: &Arc<Hook>, path: &str) -> (tokio::runtime::Runtime, String) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let listener = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let url = format!("http://{}{path}", listener.local_addr().unwrap());
    let app = Router::new()
        .route(path, post(receive))
        .with_state(hook.clone());
    rt.spawn(async move { axum::serve(listener, app).await });
    (rt, url)
}

#[test]
fn a_promotion_to_dead_is_posted_to_the_webhook_and_retried() {
    let hook = Arc::new(Hook {
        refuse_first: Mutex::new(1),
        ..Hook::default()
    });
    let (_rt, url) = serve_hook(&hook, "/hook");

    let o = Oprec::migrated();
    let dead = o.enqueue("demo.flaky", r#"{"fail_times": 9, "class": "permanent"}"#);
    let fine = o.enqueue("demo.noop", "{}");
    let worker = Background::start(
        &o,
        &[
            "--transport",
            "poll",
            "worker",
            "--demo",
            "--dead-letter-webhook",
            &url,
        ],
    );
    let began = Instant::now();
    while hook.posts.lock().unwrap().len() < 2 {
        assert!(
            began.elapsed() < Duration::from_secs(30),
            "posts: {:?}",
            hook.posts.lock().unwrap()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // One more pass of the alerter: an accepted announcement is not repeated.
    std::thread::sleep(Duration::from_secs(3));
    worker.stop();

    let posts = hook.posts.lock().unwrap().clone();
    assert_eq!(posts.len(), 2, "refused once, then accepted: {posts:?}");
    assert_eq!(
        posts[0], posts[1],
        "the retry carries the same announcement"
    );
    let p = &posts[0];
    assert_eq!(p["id"], dead.as_str());
    assert_eq!(p["kind"], "demo.flaky");
    assert_eq!(p["reason"], "permanent");
    assert_eq!(p["class"], "permanent");
    assert_eq!(p["attempts"], 1);
    assert!(
        p["error"]["summary"]
            .as_str()
            .unwrap()
            .contains("simulated permanent failure"),
        "{p}"
    );
    assert!(!posts.iter().any(|p| p["id"] == fine.as_str()));
}

/// The webhook URL can come from the environment (OPREC_DEAD_LETTER_WEBHOOK), which keeps a
/// secret path out of `ps`; the worker posts to it and prints only its scheme and host.
#[test]
fn the_webhook_comes_from_the_environment_and_its_path_is_never_printed() {
    let hook = Arc::new(Hook::default());
    let (_rt, url) = serve_hook(&hook, "/services/T0SECRET/B0SECRET");

    let o = Oprec::migrated();
    let dead = o.enqueue("demo.flaky", r#"{"fail_times": 9, "class": "permanent"}"#);
    let log = std::fs::File::create(o.path("worker.log")).unwrap();
    let mut worker = o
        .command(&["-v", "--transport", "poll", "worker", "--demo"])
        .env("OPREC_DEAD_LETTER_WEBHOOK", &url)
        .stdin(std::process::Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .unwrap();
    let began = Instant::now();
    while hook.posts.lock().unwrap().is_empty() && began.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = std::process::Command::new("kill")
        .args(["-TERM", &worker.id().to_string()])
        .status();
    let _ = worker.wait();
    let printed = std::fs::read_to_string(o.path("worker.log")).unwrap();
    let posts = hook.posts.lock().unwrap().clone();
    assert_eq!(posts.len(), 1, "{posts:?}\n{printed}");
    assert_eq!(posts[0]["id"], dead.as_str());
    assert!(
        printed.contains("127.0.0.1"),
        "the worker names where it posts: {printed}"
    );
    assert!(
        !printed.contains("SECRET"),
        "the webhook's path is printed: {printed}"
    );
}

#[test]
fn worker_flags_are_checked() {
    let o = Oprec::migrated();
    let w =
        |extra: &[&str]| o.run(&[&["--transport", "poll", "worker", "--demo"][..], extra].concat());
    w(&["--metrics-listen", "everywhere"]).bad_input("--metrics-listen");
    w(&["--dead-letter-webhook", "ftp://example.invalid/x"]).bad_input("--dead-letter-webhook");
    w(&["--dead-letter-webhook", "not a url"]).bad_input("--dead-letter-webhook");
    w(&["--reconcile-interval", "0s"]).bad_input("--reconcile-interval");
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let busy = w(&["--metrics-listen", &addr, "--exit-when-idle"]);
    assert_eq!(busy.code, Some(1), "{busy:?}");
    assert!(busy.stderr.contains("cannot serve metrics"), "{busy:?}");
}

/// Work a control holds back has a gauge per control, and the oldest-eligible gauge leaves it
/// out, so an "oldest eligible is overdue" alert is not raised by a pause, and a paused backlog
/// shows where it waits.
#[test]
fn held_back_work_has_a_gauge_per_control() {
    let o = Oprec::migrated();
    o.run(&["pause", "--kind", "demo.noop", "--reason", "maintenance"])
        .ok();
    o.run(&[
        "postpone",
        "--dependency",
        "elsewhere",
        "--until",
        "1h",
        "--reason",
        "their outage",
    ])
    .ok();
    o.run(&[
        "enqueue",
        "--kind",
        "demo.noop",
        "--payload",
        "{}",
        "--count",
        "2",
    ])
    .ok();
    o.enqueue("demo.flaky", r#"{"fail_times": 0}"#);
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let _worker = Background::start(
        &o,
        &[
            "--transport",
            "poll",
            "worker",
            "--demo",
            "--metrics-listen",
            &addr,
        ],
    );
    let held = r#"oprec_held_back_operations{control="kind:demo.noop"}"#;
    let began = Instant::now();
    let text = loop {
        if let Some(t) = scrape(port)
            && sample(&t, r#"oprec_operations{status="succeeded"}"#) == Some(1.0)
            && sample(&t, held) == Some(2.0)
        {
            break t;
        }
        assert!(
            began.elapsed() < Duration::from_secs(30),
            "no held-back gauge: {:?}",
            scrape(port)
        );
        std::thread::sleep(Duration::from_millis(300));
    };
    assert_eq!(
        sample(
            &text,
            r#"oprec_held_back_operations{control="dependency:elsewhere"}"#
        ),
        Some(0.0),
        "{text}"
    );
    assert!(
        sample(
            &text,
            r#"oprec_held_back_overdue_seconds{control="kind:demo.noop"}"#
        )
        .is_some_and(|s| s >= 0.0),
        "{text}"
    );
    assert_eq!(
        sample(&text, "oprec_oldest_eligible_overdue_seconds"),
        Some(0.0),
        "paused work is not overdue work: {text}"
    );
    assert!(text.contains("# HELP oprec_held_back_operations"), "{text}");
}

/// Alerts routed to their owner, through the binary: `--alert-route dependency:NAME=URL` takes
/// the configuration holds of the demo kinds' dependency and the pause they open
/// (`--pause-on-configuration`) and the death of an operation calling it, so the default webhook
/// gets nothing (tests/alert_routes.rs covers which route wins). `oprec alerts` (text and JSON) says what went where; `oprec controls` shows the pause; a
/// route mistake is bad input that never prints the URL.
#[test]
fn alerts_go_to_their_route_and_the_log_says_what_went_where() {
    let owner = Arc::new(Hook::default());
    let (_rt1, owner_url) = serve_hook(&owner, "/owner/T0SECRET");
    let fallback = Arc::new(Hook::default());
    let (_rt2, fallback_url) = serve_hook(&fallback, "/fallback");

    let o = Oprec::migrated();
    let held = o.enqueue(
        "demo.flaky",
        r#"{"fail_times": 9, "class": "configuration"}"#,
    );
    let dead = o.enqueue("demo.flaky", r#"{"fail_times": 9, "class": "permanent"}"#);
    let route = format!("dependency:demo-provider={owner_url}");
    let worker = Background::start(
        &o,
        &[
            "--transport",
            "poll",
            "worker",
            "--demo",
            "--alert-route",
            &route,
            "--pause-on-configuration",
            "--dead-letter-webhook",
            &fallback_url,
        ],
    );
    let began = Instant::now();
    while owner.posts.lock().unwrap().len() < 3 {
        assert!(
            began.elapsed() < Duration::from_secs(30),
            "owner: {:?}\nfallback: {:?}",
            owner.posts.lock().unwrap(),
            fallback.posts.lock().unwrap()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // One more pass: nothing is told twice.
    std::thread::sleep(Duration::from_secs(3));
    worker.stop();

    let to_owner = owner.posts.lock().unwrap().clone();
    let events: Vec<&str> = to_owner
        .iter()
        .filter_map(|p| p["event"].as_str())
        .collect();
    assert_eq!(events.len(), 3, "{to_owner:?}");
    for event in ["held", "paused", "dead"] {
        assert!(events.contains(&event), "{events:?}");
    }
    let hold = to_owner.iter().find(|p| p["event"] == "held").unwrap();
    assert_eq!(hold["operation"], held.as_str());
    assert_eq!(hold["dependency"], "demo-provider");
    let death = to_owner.iter().find(|p| p["event"] == "dead").unwrap();
    assert_eq!(death["id"], dead.as_str());
    let to_fallback = fallback.posts.lock().unwrap().clone();
    assert!(to_fallback.is_empty(), "{to_fallback:?}");

    let log = o.run(&["alerts", "--json"]).json();
    let log = log.as_array().unwrap();
    assert_eq!(log.len(), 3, "{log:?}");
    for e in log {
        assert_eq!(e["status"], "sent", "{e}");
        assert!(!e["target"].as_str().unwrap().contains("T0SECRET"), "{e}");
        // A failed send's reason is `send_error`: `last_error` means an operation's error.
        assert!(
            e.get("send_error").is_some() && e.get("last_error").is_none(),
            "{e}"
        );
    }
    let route_of = |event: &str| {
        log.iter()
            .find(|e| e["event"] == event)
            .map(|e| e["route"].as_str().unwrap().to_owned())
            .unwrap()
    };
    assert_eq!(route_of("held"), "dependency:demo-provider");
    assert_eq!(route_of("paused"), "dependency:demo-provider");
    assert_eq!(route_of("dead"), "dependency:demo-provider");
    let held_only = o.run(&["alerts", "--event", "held", "--json"]).json();
    assert_eq!(held_only.as_array().unwrap().len(), 1);
    let text = o.run(&["alerts"]).ok().to_owned();
    assert!(text.contains("dependency demo-provider"), "{text}");
    assert!(text.contains(&held), "{text}");
    assert!(!text.contains("T0SECRET"), "{text}");
    // When, read both ways ("3s ago (2026-…Z)"), and the next action the record states.
    assert!(
        text.contains("NEXT ACTION") && text.contains(" ago ("),
        "{text}"
    );

    let controls = o.run(&["controls", "--json"]).json();
    let controls = controls.to_string();
    assert!(controls.contains("demo-provider"), "{controls}");
    assert!(controls.contains("configuration failure"), "{controls}");

    o.run(&["alerts", "--event", "exploded"])
        .bad_input("--event");
    o.run(&["alerts", "--limit", "0"]).bad_input("limit");
    let mistake = o.run(&[
        "--transport",
        "poll",
        "worker",
        "--demo",
        "--alert-route",
        "team:payments=https://hooks.example/T0SECRET",
    ]);
    mistake.bad_input("--alert-route");
    assert!(!format!("{mistake:?}").contains("T0SECRET"), "{mistake:?}");
}
