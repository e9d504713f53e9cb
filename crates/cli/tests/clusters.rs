//! A fleet on a broker cluster, with real processes: two `oprec worker`s drain two kinds through a
//! three-node Redis Cluster started by the test (each kind's stream on the cluster, keys hash-
//! tagged by the prefix), and through RabbitMQ quorum queues (`queue_type=quorum`, on the one
//! local node: a cluster of nodes does not fit this machine). Every operation succeeds once, the
//! broker is left empty, and the queues really are quorum queues.

#![cfg(unix)]

mod common;
mod rig;

use std::time::{Duration, Instant};

use oprec_testkit::services::PrivateRedisCluster;
use rig::{Rig, RigKind, Servers, poll, with_param};

const PER_KIND: i64 = 400;

/// Enqueues `PER_KIND` operations of `demo.effect` and of `demo.noop` through `transport`, drains
/// them with two workers on it, and checks the end: all succeeded with one attempt each, the
/// broker's depth 0. Returns how long the drain took.
fn drain_two_kinds(rig: &Rig, transport: &str) -> Duration {
    let started = Instant::now();
    for kind in ["demo.effect", "demo.noop"] {
        let v = rig.oprec_json(&[
            "--transport",
            transport,
            "enqueue",
            "--kind",
            kind,
            "--payload",
            "{}",
            "--count",
            &PER_KIND.to_string(),
            "--json",
        ]);
        assert_eq!(v["created"], PER_KIND, "{v}");
    }
    let mut workers: Vec<rig::Proc> = ["cl-a", "cl-b"]
        .iter()
        .map(|name| {
            let mut w = rig.spawn(
                name,
                &[
                    "--transport",
                    transport,
                    "worker",
                    "--demo",
                    "--rewake-after",
                    "60s",
                ],
            );
            w.wait_until_up();
            w
        })
        .collect();
    let done = poll(Duration::from_secs(60), Duration::from_millis(100), || {
        (rig.scalar("SELECT count(*) FROM operations WHERE status = 'succeeded'") == 2 * PER_KIND)
            .then(|| started.elapsed())
    });
    let took = done.unwrap_or_else(|| {
        panic!(
            "not every operation finished within 60 s: {:?}",
            rig.statuses()
        )
    });
    // Neither worker lost the broker (and fell back to polling the store), and the broker holds
    // nothing afterwards: every wake-up was taken.
    for w in &workers {
        assert!(
            !w.stderr().contains("the broker does not answer"),
            "{} fell back to polling: {}",
            w.name,
            w.stderr()
        );
    }
    let drained = poll(Duration::from_secs(20), Duration::from_millis(100), || {
        let depth = rig.oprec_json(&["--transport", transport, "transport", "depth", "--json"]);
        (depth["depth"].as_u64() == Some(0)).then_some(depth)
    });
    assert!(drained.is_some(), "wake-ups left on the broker");
    for w in &mut workers {
        w.sigterm();
        assert!(
            w.wait_for_exit(Duration::from_secs(30))
                .is_some_and(|s| s.success()),
            "{} did not stop cleanly: {}",
            w.name,
            w.stderr()
        );
    }
    assert_eq!(
        rig.statuses(),
        [("succeeded".to_owned(), 2 * PER_KIND)],
        "every operation succeeded"
    );
    assert_eq!(
        rig.scalar("SELECT count(*) FROM operation_attempts"),
        2 * PER_KIND,
        "one attempt per operation"
    );
    took
}

#[test]
fn a_fleet_drains_two_kinds_through_a_redis_cluster() {
    let cluster = PrivateRedisCluster::start();
    let rig = Rig::on(
        RigKind::PostgresRedis,
        "redis cluster",
        Servers {
            redis: cluster.url(),
            ..Servers::shared()
        },
    );
    let transport = rig.transport_url().to_owned();
    let took = drain_two_kinds(&rig, &transport);
    // Each kind has its stream on the cluster, both in the slot of the prefix's hash tag.
    let depths = rig.oprec_json(&["transport", "depth", "--json"]);
    let kinds: Vec<&str> = depths["kinds"]
        .as_array()
        .expect("kinds")
        .iter()
        .filter_map(|k| k["kind"].as_str())
        .collect();
    assert!(
        kinds.contains(&"demo.effect") && kinds.contains(&"demo.noop"),
        "the cluster holds a stream per kind: {depths}"
    );
    rig.report(&format!(
        "{} operations of two kinds drained by two workers through a 3-node Redis Cluster in \
         {:.1} s, one attempt each, nothing left on the streams",
        2 * PER_KIND,
        took.as_secs_f64()
    ));
    drop(rig);
    drop(cluster);
}

#[test]
fn a_fleet_drains_two_kinds_through_rabbitmq_quorum_queues() {
    let rig = Rig::new(RigKind::PostgresAmqp, "quorum queues");
    let transport = with_param(rig.transport_url(), "queue_type=quorum");
    let took = drain_two_kinds(&rig, &transport);
    let prefix = transport
        .split_once("prefix=")
        .and_then(|(_, rest)| rest.split('&').next())
        .expect("the rig's prefix")
        .to_owned();
    for kind in ["demo.effect", "demo.noop"] {
        let queue = format!("{prefix}.{kind}");
        assert_eq!(
            common::amqp_queue_type(&rig::Servers::shared().amqp, &queue),
            "quorum",
            "{queue}"
        );
    }
    rig.report(&format!(
        "{} operations of two kinds drained by two workers through RabbitMQ quorum queues in \
         {:.1} s, one attempt each, nothing left on the queues",
        2 * PER_KIND,
        took.as_secs_f64()
    ));
}
