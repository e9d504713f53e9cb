//! Pools split by kind on one broker: real `oprec worker --kinds ...` processes, one pool running
//! `demo.noop` and another `demo.slow`, share one PostgreSQL and one Redis (or RabbitMQ). Each
//! kind's wake-ups travel on its own stream or queue, so each pool receives only its own: both
//! kinds drain promptly (the re-wake interval is set to a minute, so a wake-up taken by the wrong
//! pool would show as a minute's stall), and the attempt history shows that no worker claimed a
//! kind it does not run. And `--db-connections` caps the sessions a worker opens.

mod common;
mod rig;

use std::time::{Duration, Instant};

use rig::{Proc, Rig, RigKind, poll};

/// Operations enqueued per kind.
const PER_KIND: i64 = 1000;

/// A worker of one pool: only `kinds`, and a re-wake interval long enough that the drain cannot
/// lean on re-wakes.
fn pool_worker(rig: &Rig, name: &str, kinds: &str) -> Proc {
    let mut w = rig.spawn(
        name,
        &[
            "worker",
            "--demo",
            "--kinds",
            kinds,
            "--rewake-after",
            "60s",
            "--concurrency",
            "64",
        ],
    );
    w.wait_until_up();
    w
}

/// Seconds from the first enqueue of `kind` to its last operation's end.
fn drain_secs(rig: &Rig, kind: &str) -> f64 {
    let millis = rig.scalar(&format!(
        "SELECT (extract(epoch FROM max(terminal_at) - min(created_at)) * 1000)::int8 \
         FROM operations WHERE kind = '{kind}'"
    ));
    millis as f64 / 1000.0
}

fn two_pools_take_only_their_own_kinds(kind: RigKind) {
    let rig = Rig::new(kind, "two pools with disjoint kinds");
    let mut workers = vec![
        pool_worker(&rig, "pool-noop-1", "demo.noop"),
        pool_worker(&rig, "pool-noop-2", "demo.noop"),
        pool_worker(&rig, "pool-slow-1", "demo.slow"),
    ];
    let started = Instant::now();
    let count = PER_KIND.to_string();
    rig.oprec_ok(&[
        "enqueue",
        "--kind",
        "demo.noop",
        "--payload",
        "{}",
        "--count",
        &count,
    ]);
    rig.oprec_ok(&[
        "enqueue",
        "--kind",
        "demo.slow",
        "--payload",
        r#"{"ms": 2}"#,
        "--count",
        &count,
    ]);
    // A wake-up lost to the wrong pool would wait out the 60 s re-wake interval.
    let drained = poll(Duration::from_secs(45), Duration::from_millis(200), || {
        (rig.scalar("SELECT count(*) FROM operations WHERE status = 'succeeded'") == 2 * PER_KIND)
            .then(|| started.elapsed())
    });
    let Some(took) = drained else {
        panic!(
            "not drained within 45 s: {:?}\n{}",
            rig.statuses(),
            rig.dump()
        );
    };
    let (noop, slow) = (drain_secs(&rig, "demo.noop"), drain_secs(&rig, "demo.slow"));
    // Every operation within a generous bound of its enqueue: none waited for a re-wake.
    let slowest = rig.scalar(
        "SELECT (extract(epoch FROM max(terminal_at - created_at)) * 1000)::int8 FROM operations",
    );
    assert!(
        slowest < 30_000,
        "an operation took {slowest} ms from enqueue to its end"
    );

    // Who claimed what, from the attempt history: the worker id is "$HOSTNAME-$PID".
    let claims = rig.counts(
        "SELECT o.kind || ' ' || regexp_replace(a.worker_id, '-[0-9]+$', ''), count(*) \
         FROM operation_attempts a JOIN operations o ON o.id = a.operation_id \
         GROUP BY 1 ORDER BY 1",
    );
    for (who, n) in &claims {
        let (kind, worker) = who.split_once(' ').expect("kind and worker");
        let pool = match kind {
            "demo.noop" => "pool-noop-",
            "demo.slow" => "pool-slow-",
            other => panic!("an attempt of {other}"),
        };
        assert!(
            worker.starts_with(pool),
            "{worker} claimed {n} {kind} operations, a kind it does not run: {claims:?}"
        );
    }
    let attempts: i64 = claims.iter().map(|(_, n)| n).sum();
    assert_eq!(attempts, 2 * PER_KIND, "one attempt each: {claims:?}");

    // A new process lists every kind's depth: Redis from its set of kinds, RabbitMQ (which
    // cannot list queues) from the kinds the store has operations of.
    let depth = rig.oprec_json(&["transport", "depth", "--json"]);
    assert_eq!(depth["depth"], 0, "{depth}");
    assert_eq!(
        depth["kinds"],
        serde_json::json!([
            {"kind": "demo.noop", "depth": 0},
            {"kind": "demo.slow", "depth": 0},
        ]),
        "{depth}"
    );

    let mut summaries = Vec::new();
    for w in &mut workers {
        w.sigterm();
        w.wait_for_exit(Duration::from_secs(30))
            .expect("the worker drains and stops");
        summaries.push(format!("{}: {}", w.name, w.stdout().trim()));
    }
    rig.report(&format!(
        "{PER_KIND} demo.noop (2 workers) and {PER_KIND} demo.slow (1 worker), rewake 60 s: all \
         done {:.1} s after the first enqueue (noop drained in {noop:.1} s, slow in {slow:.1} s, \
         slowest operation {:.1} s); claims {claims:?}; {}",
        took.as_secs_f64(),
        slowest as f64 / 1000.0,
        summaries.join("; ")
    ));
}

#[test]
fn two_pools_on_redis_take_only_their_own_kinds() {
    two_pools_take_only_their_own_kinds(RigKind::PostgresRedis);
}

#[test]
fn two_pools_on_rabbitmq_take_only_their_own_kinds() {
    two_pools_take_only_their_own_kinds(RigKind::PostgresAmqp);
}

#[test]
fn a_kind_no_registry_has_is_refused() {
    let rig = Rig::new(RigKind::SqlitePoll, "unknown kind");
    let (status, _, err) = rig.oprec(&["worker", "--demo", "--kinds", "demo.noop,billing.charge"]);
    assert_eq!(status.code(), Some(2), "{err}");
    assert!(
        err.contains(r#"--kinds: unknown kind "billing.charge"; registered kinds: demo.crash"#),
        "{err}"
    );
}

/// A kind that cannot name a stream or queue is bad input for depth and purge: one line, exit 2,
/// before anything reaches the broker (nothing listens on port 1 here).
#[test]
fn a_kind_that_cannot_name_a_queue_is_bad_input() {
    let o = common::Oprec::new();
    let broker = "redis://127.0.0.1:1/0";
    for args in [
        &["transport", "depth", "--kind", "two\nlines"][..],
        &["transport", "depth", "--kind", ""][..],
        &["transport", "purge", "--yes", "--kind", "two\nlines"][..],
    ] {
        o.run(&[&["--transport", broker][..], args].concat())
            .bad_input("--kind: ");
    }
    let long = "k".repeat(300);
    o.run(&["--transport", broker, "transport", "depth", "--kind", &long])
        .bad_input("a transport routes kinds of at most 200");
}

/// The most sessions named `name` (or one of its handlers' fenced transactions) that
/// PostgreSQL held at once while the worker `w` ran to its idle exit, sampled every 20 ms.
fn most_sessions_until_exit(rig: &Rig, w: &mut Proc, name: &str) -> i64 {
    let mut most = 0;
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        most = most.max(rig.scalar(&format!(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = '{name}' \
             OR application_name LIKE '{name} op %'"
        )));
        if let Some(status) = w.wait_for_exit(Duration::from_millis(20)) {
            assert!(status.success(), "{name} exited with {status}");
            return most;
        }
        assert!(Instant::now() < deadline, "{name} did not finish in 60 s");
    }
}

/// `--db-connections` caps a process's sessions: a worker whose 16 handlers each hold a session
/// in a fenced transaction opens 10 (the default pool) without it, and 2 with
/// `--db-connections 2`, where the handlers take turns and every operation still succeeds.
#[test]
fn db_connections_caps_a_workers_sessions() {
    let rig = Rig::new(RigKind::PostgresPoll, "db connections");
    let payload = r#"{"fenced": true, "sleep_after_ms": 50}"#;
    let run = |name: &str, extra: &[&str]| {
        rig.enqueue_count("demo.effect", payload, 64);
        let args = [
            extra,
            &[
                "worker",
                "--demo",
                "--concurrency",
                "16",
                "--exit-when-idle",
            ][..],
        ]
        .concat();
        let mut w = rig.spawn(name, &args);
        most_sessions_until_exit(&rig, &mut w, name)
    };
    let uncapped = run("uncapped", &[]);
    let capped = run("capped", &["--db-connections", "2"]);
    assert!(
        uncapped > 2,
        "without the flag the worker held only {uncapped} sessions: the test shows nothing"
    );
    assert!(capped <= 2, "--db-connections 2 held {capped} sessions");
    assert_eq!(rig.statuses(), vec![("succeeded".to_owned(), 128)]);
}

#[test]
fn db_connections_out_of_range_is_refused_before_anything_runs() {
    let o = common::Oprec::new();
    for n in ["0", "1001", "many"] {
        let r = o.run(&["--db-connections", n, "stats"]);
        assert_eq!(r.code, Some(2), "--db-connections {n}: {}", r.stderr);
        assert!(r.stderr.contains("--db-connections"), "{}", r.stderr);
    }
}
