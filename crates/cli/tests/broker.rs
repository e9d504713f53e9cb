//! Purging a real broker (Redis, at OPREC_TEST_REDIS_URL or 127.0.0.1:6379, database 9, under a
//! key prefix of the test's own, deleted when it ends) drops wake-ups, never intent: the purge
//! report counts the operations still pending, and a worker started afterwards runs every one of
//! them once, woken again by its scheduler's first pass. Depth and purge act per kind, or on
//! every kind. The depth is what the broker holds, after a trim or a purge made behind oprec's
//! back too, and asking it (on RabbitMQ) declares nothing.

mod common;

use common::{Oprec, RedisPrefixGuard, delete_amqp_prefix};

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

/// A key prefix of the test's own on the test Redis: the transport URL naming it, and the guard
/// that deletes its keys when the test ends.
fn fresh_redis(tag: &str) -> (String, RedisPrefixGuard) {
    let prefix = format!("oprec:test:{tag}:{}", uuid::Uuid::now_v7().simple());
    let base = redis_url();
    let sep = if base.contains('?') { '&' } else { '?' };
    let url = format!("{base}{sep}prefix={prefix}");
    (url, RedisPrefixGuard { url: base, prefix })
}

#[test]
fn purge_drops_wakeups_and_keeps_every_operation() {
    let o = Oprec::migrated();
    let (redis, _keys) = fresh_redis("broker");
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
    t(&[
        "enqueue",
        "--kind",
        "demo.slow",
        "--payload",
        r#"{"ms": 1}"#,
        "--count",
        "20",
    ])
    .ok();
    let depth = t(&["transport", "depth", "--json"]).json();
    assert_eq!(depth["depth"], 320, "{depth}");
    assert_eq!(
        depth["kinds"],
        serde_json::json!([
            {"kind": "demo.noop", "depth": 300},
            {"kind": "demo.slow", "depth": 20},
        ])
    );
    let table = t(&["transport", "depth"]).ok().to_owned();
    assert!(table.contains("320 wake-ups waiting"), "{table}");
    assert!(table.contains("demo.noop  300"), "{table}");
    assert_eq!(
        t(&["transport", "depth", "--kind", "demo.slow", "--json"]).json()["depth"],
        20
    );
    // Without --yes: a dry run that says what would go, changes nothing and exits 0.
    let dry = t(&["transport", "purge", "--kind", "demo.slow", "--json"]).json();
    assert_eq!(dry["dry_run"], true, "{dry}");
    assert_eq!(dry["would_purge"], 20, "{dry}");
    let dry = t(&["transport", "purge"]).ok().to_owned();
    assert!(
        dry.starts_with("dry run: purging would drop every wake-up") && dry.contains("(320 now)"),
        "{dry}"
    );
    assert_eq!(t(&["transport", "depth", "--json"]).json()["depth"], 320);
    let purged = t(&["transport", "purge", "--kind", "demo.slow", "--yes"])
        .ok()
        .to_owned();
    assert_eq!(
        purged.trim(),
        "purged 20 demo.slow wake-ups; 20 demo.slow operations are still pending in the store: \
         no intent was lost; the scheduler wakes them again on its next pass"
    );
    assert_eq!(t(&["transport", "depth", "--json"]).json()["depth"], 300);
    let purged = t(&["transport", "purge", "--yes"]).ok().to_owned();
    assert_eq!(
        purged.trim(),
        "purged 300 wake-ups; 320 operations are still pending in the store: no intent was lost; \
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
    assert!(summary.contains("claimed 320, succeeded 320"), "{summary}");
    let ops = o.run(&["ops", "list", "--limit", "1000", "--json"]).json();
    let ops = ops.as_array().unwrap();
    assert_eq!(ops.len(), 320);
    assert!(
        ops.iter()
            .all(|op| op["status"] == "succeeded" && op["attempt"] == 1)
    );
}

fn amqp_url() -> String {
    std::env::var("OPREC_TEST_AMQP_URL")
        .unwrap_or_else(|_| "amqp://guest:guest@127.0.0.1:5672/%2f".into())
}

/// Whether RabbitMQ has the exchange, or the queue, named (a passive declare).
fn amqp_has(exchange: Option<&str>, queue: Option<&str>) -> bool {
    use lapin::options::{ExchangeDeclareOptions, QueueDeclareOptions};
    use lapin::types::FieldTable;
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let conn = lapin::Connection::connect(&amqp_url(), lapin::ConnectionProperties::default())
            .await
            .expect("RabbitMQ is required");
        let channel = conn.create_channel().await.unwrap();
        let found = match (exchange, queue) {
            (Some(e), _) => channel
                .exchange_declare(
                    e.into(),
                    lapin::ExchangeKind::Direct,
                    ExchangeDeclareOptions {
                        passive: true,
                        ..ExchangeDeclareOptions::default()
                    },
                    FieldTable::default(),
                )
                .await
                .is_ok(),
            (None, Some(q)) => channel
                .queue_declare(
                    q.into(),
                    QueueDeclareOptions {
                        passive: true,
                        ..QueueDeclareOptions::default()
                    },
                    FieldTable::default(),
                )
                .await
                .is_ok(),
            (None, None) => unreachable!(),
        };
        let _ = conn.close(200, "OK".into()).await;
        found
    })
}

/// Purges a RabbitMQ queue behind oprec's back, as an operator with the management UI would.
fn amqp_purge(queue: &str) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let conn = lapin::Connection::connect(&amqp_url(), lapin::ConnectionProperties::default())
            .await
            .expect("RabbitMQ is required");
        let channel = conn.create_channel().await.unwrap();
        channel
            .queue_purge(queue.into(), Default::default())
            .await
            .expect("purge");
        let _ = conn.close(200, "OK".into()).await;
    })
}

#[test]
fn amqp_depth_declares_nothing_and_follows_a_purge_behind_its_back() {
    let o = Oprec::migrated();
    let prefix = format!("oprec.test.depth.{}", uuid::Uuid::now_v7().simple());
    struct Cleanup(String);
    impl Drop for Cleanup {
        fn drop(&mut self) {
            delete_amqp_prefix(&amqp_url(), &self.0);
        }
    }
    let _cleanup = Cleanup(prefix.clone());
    let amqp = format!("{}?prefix={prefix}", amqp_url());
    let t = |args: &[&str]| o.run(&[&["--transport", amqp.as_str()][..], args].concat());

    let depth = t(&["transport", "depth", "--kind", "demo.noop", "--json"]);
    assert_eq!(depth.code, Some(0), "RabbitMQ is required: {depth:#?}");
    assert_eq!(depth.json()["depth"], 0);
    assert!(
        !depth.stderr.contains("ERROR"),
        "asking the depth of a kind with no queue is not an error: {}",
        depth.stderr
    );
    assert!(
        !amqp_has(Some(&prefix), None),
        "transport depth declared the exchange"
    );
    let queue = format!("{prefix}.demo.noop");
    assert!(
        !amqp_has(None, Some(&queue)),
        "transport depth declared the queue"
    );

    t(&[
        "enqueue",
        "--kind",
        "demo.noop",
        "--payload",
        "{}",
        "--count",
        "50",
    ])
    .ok();
    assert_eq!(t(&["transport", "depth", "--json"]).json()["depth"], 50);
    amqp_purge(&queue);
    assert_eq!(
        t(&["transport", "depth", "--kind", "demo.noop", "--json"]).json()["depth"],
        0,
        "the depth is what the broker holds"
    );
    assert_eq!(
        o.run(&["stats", "--json"]).json()["by_status"]["pending"],
        50,
        "and the intent is still in the store"
    );
}

#[test]
fn redis_depth_after_a_trim_is_what_the_stream_holds() {
    let o = Oprec::migrated();
    let (redis, keys) = fresh_redis("trim");
    let prefix = keys.prefix.clone();
    let t = |args: &[&str]| o.run(&[&["--transport", redis.as_str()][..], args].concat());
    let enqueue = |n: &str| {
        t(&[
            "enqueue",
            "--kind",
            "demo.noop",
            "--payload",
            "{}",
            "--count",
            n,
        ])
        .ok();
    };

    // A worker reads the first 30: the stream's group exists and has read.
    enqueue("30");
    let summary = t(&["worker", "--demo", "--exit-when-idle"]).ok().to_owned();
    assert!(summary.contains("succeeded 30"), "{summary}");
    enqueue("40");
    assert_eq!(t(&["transport", "depth", "--json"]).json()["depth"], 40);

    // Trimmed behind oprec's back: the group's lag still counts the 40, the stream holds none.
    let client = redis::Client::open(redis_url()).unwrap();
    let mut conn = client.get_connection().expect("Redis is required");
    let _: i64 = redis::cmd("XTRIM")
        .arg(format!("{{{prefix}}}:kind:demo.noop"))
        .arg("MAXLEN")
        .arg(0)
        .query(&mut conn)
        .expect("XTRIM");
    assert_eq!(
        t(&["transport", "depth", "--json"]).json()["depth"],
        0,
        "the depth is what the stream holds"
    );
    assert_eq!(
        o.run(&["stats", "--json"]).json()["by_status"]["pending"],
        40
    );
}
