//! An operation of a kind no running worker knows: a producer that knows
//! `nobody.knows` enqueues it, a demo worker (which does not) runs beside it: the operation is
//! never claimed (pending, attempt 0), `oprec stats` reports it as unhandled, and
//! `oprec workers` lists the live worker and its kinds, the worker's metrics carry it as
//! `oprec_unhandled_operations{kind}`; after the worker stops cleanly, its row is gone.

mod background;
mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use background::Background;
use common::Oprec;
use oprec::{Client, EnqueueOptions, Kind, Registry, RetryPolicy};
use serde_json::Value;

/// Enqueues one `nobody.knows` operation through the library, as a newer producer would.
fn enqueue_unknown_kind(url: &str) -> String {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    rt.block_on(async {
        let store = oprec::sqlite::SqliteStore::connect(url)
            .await
            .expect("store");
        let policy = RetryPolicy::builder()
            .timeout(chrono::Duration::seconds(10))
            .max_attempts(3)
            .local_only()
            .jitter(oprec::Jitter::None)
            .build()
            .expect("policy");
        let kind = Kind::new("nobody.knows", policy, |_ctx, _p: Value| async { Ok(()) });
        let client = Client::new(
            Arc::new(store),
            None,
            Arc::new(Registry::new().register(kind)),
        );
        let e = client
            .enqueue(
                "nobody.knows",
                serde_json::json!({"n": 1}),
                EnqueueOptions::default(),
            )
            .await
            .expect("enqueue");
        e.id.to_string()
    })
}

/// The worker's Prometheus text, if it answers.
fn metrics(port: u16) -> Option<String> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        .ok()?;
    let mut text = String::new();
    s.read_to_string(&mut text).ok()?;
    text.starts_with("HTTP/1.1 200").then_some(text)
}

/// Polls `f` until it is true, up to 30 s.
fn wait_until(what: &str, mut f: impl FnMut() -> bool) {
    let began = Instant::now();
    while !f() {
        assert!(
            began.elapsed() < Duration::from_secs(30),
            "waited 30 s for {what}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn a_kind_no_worker_knows_stays_pending_and_shows_as_unhandled() {
    let o = Oprec::migrated();
    let unknown = enqueue_unknown_kind(&o.url);
    let known = o.enqueue("demo.noop", "{}");

    // No worker yet: everything pending is unhandled.
    let before = o.run(&["stats", "--json"]).json();
    assert_eq!(
        before["unhandled"].as_array().map(Vec::len),
        Some(2),
        "{before}"
    );

    let port = oprec_testkit::services::free_port();
    let listen = format!("127.0.0.1:{port}");
    let worker = Background::start(
        &o,
        &[
            "--transport",
            "poll",
            "worker",
            "--demo",
            "--metrics-listen",
            &listen,
        ],
    );
    wait_until("the demo operation to succeed", || {
        o.show(&known)["operation"]["status"] == "succeeded"
    });
    wait_until("the worker to register", || {
        o.run(&["workers", "--json"]).json()["workers"]
            .as_array()
            .is_some_and(|w| w.len() == 1)
    });
    let workers = o.run(&["workers", "--json"]).json();
    let w = &workers["workers"][0];
    let kinds: Vec<&str> = w["kinds"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        kinds.contains(&"demo.noop") && !kinds.contains(&"nobody.knows"),
        "{workers}"
    );
    assert!(w["pid"].as_u64().is_some_and(|p| p > 0), "{workers}");

    // Let the worker poll a few more times: it must not touch the unknown kind.
    std::thread::sleep(Duration::from_millis(1500));
    let stats = o.run(&["stats", "--json"]).json();
    let unhandled = stats["unhandled"].as_array().expect("unhandled").clone();
    assert_eq!(unhandled.len(), 1, "{stats}");
    assert_eq!(unhandled[0]["kind"], "nobody.knows");
    assert_eq!(unhandled[0]["pending"], 1);
    assert_eq!(unhandled[0]["eligible"], 1);
    let text = o.run(&["stats"]).ok().to_owned();
    let section = text
        .split("unhandled")
        .nth(1)
        .expect("an unhandled section");
    assert!(section.contains("nobody.knows"), "{text}");
    assert!(!section.contains("demo.noop"), "{text}");
    let listing = o.run(&["workers"]).ok().to_owned();
    assert!(
        listing.contains("demo.noop") && listing.contains("nobody.knows"),
        "{listing}"
    );

    // And as a gauge, per kind.
    let series = r#"oprec_unhandled_operations{kind="nobody.knows"} 1"#;
    wait_until("the unhandled gauge", || {
        metrics(port).is_some_and(|t| t.lines().any(|l| l == series))
    });

    worker.stop();
    let op = o.show(&unknown);
    assert_eq!(op["operation"]["status"], "pending", "{op}");
    assert_eq!(op["operation"]["attempt"], 0, "{op}");
    assert_eq!(op["attempts"].as_array().map(Vec::len), Some(0), "{op}");
    // A clean shutdown removes the worker's row.
    let after = o.run(&["workers", "--json"]).json();
    assert_eq!(
        after["workers"].as_array().map(Vec::len),
        Some(0),
        "{after}"
    );
}
