//! Purging a real broker (Redis, at OPREC_TEST_REDIS_URL or 127.0.0.1:6379, database 9, on a
//! stream of the test's own, deleted when it ends) drops wake-ups, never intent: the purge report
//! counts the operations still pending, and a worker started afterwards runs every one of them
//! once, woken again by its scheduler's first pass.

mod common;

use common::{Oprec, RedisKeyGuard};

/// The Redis URL, on its own logical database unless the URL names one.
fn redis_url() -> String {
    let base = std::env::var("OPREC_TEST_REDIS_URL")
        .unwrap_or_else(|_| "redis://127.0.0.1:6379".to_owned());
    let has_db = base
        .split_once("://")
        .is_some_and(|(_, rest)| rest.trim_end_matches('/').contains('/'));
    if has_db {
        base
    } else {
        format!("{}/9", base.trim_end_matches('/'))
    }
}

#[test]
fn purge_drops_wakeups_and_keeps_every_operation() {
    let o = Oprec::migrated();
    let stream = format!("oprec:test:broker:{}", uuid::Uuid::now_v7().simple());
    let _stream = RedisKeyGuard {
        url: redis_url(),
        key: stream.clone(),
    };
    let base = redis_url();
    let sep = if base.contains('?') { '&' } else { '?' };
    let redis = format!("{base}{sep}stream={stream}");
    let t = |args: &[&str]| o.run(&[&["--transport", redis.as_str()][..], args].concat());
    let start = t(&["transport", "purge", "--yes", "--json"]);
    assert_eq!(
        start.code,
        Some(0),
        "Redis is required at {redis}: {start:#?}"
    );

    t(&[
        "enqueue",
        "--kind",
        "demo.noop",
        "--payload",
        "{}",
        "--count",
        "300",
    ])
    .ok();
    assert_eq!(t(&["transport", "depth", "--json"]).json()["depth"], 300);
    let purged = t(&["transport", "purge", "--yes"]).ok().to_owned();
    assert_eq!(
        purged.trim(),
        "purged 300 wake-ups; 300 operations are still pending in the store: no intent was lost; \
         the scheduler wakes them again on its next pass"
    );
    assert_eq!(t(&["transport", "depth", "--json"]).json()["depth"], 0);

    // The purge marked them never woken: the scheduler's first pass wakes them, long before the
    // re-wake interval.
    let summary = t(&[
        "worker",
        "--demo",
        "--rewake-after",
        "1h",
        "--exit-when-idle",
    ])
    .ok()
    .to_owned();
    assert!(summary.contains("claimed 300, succeeded 300"), "{summary}");
    let ops = o.run(&["ops", "list", "--limit", "1000", "--json"]).json();
    let ops = ops.as_array().unwrap();
    assert_eq!(ops.len(), 300);
    assert!(
        ops.iter()
            .all(|op| op["status"] == "succeeded" && op["attempt"] == 1)
    );
}
