//! Producers in other languages, through the SQL enqueue contract, drained by a real worker: a
//! fresh PostgreSQL schema migrated by `oprec migrate`, an `oprec worker --demo` (which publishes
//! the demo kinds' policies when it starts) on each transport (poll-only, Redis, RabbitMQ), then
//!
//! - the Python producer (`examples/producers/python/enqueue.py`, psycopg 3) and the Node one
//!   (`examples/producers/node/enqueue.js`, node-postgres) as subprocesses, each placing an order
//!   and its operation in one transaction it commits and another it rolls back, and repeating an
//!   idempotency key; each refuses an unknown kind with SQLSTATE OQ001;
//! - operations enqueued with `oprec_enqueue` straight from SQL at spread moments, timed from
//!   their enqueue to their first attempt's claim.
//!
//! The worker drains every committed operation once, and nothing of the rolled-back orders
//! exists. No producer publishes a wake-up: on Redis and RabbitMQ the scheduler's re-selection
//! publishes them (the worker counts them published), and poll-only the worker claims them from
//! the store (they are never marked woken).
//!
//! The producers' dependencies must be installed (scripts/test does it: a virtualenv with
//! `examples/producers/python/requirements.txt`, and `npm ci` in `examples/producers/node`); a
//! test fails, naming the command to run, when they are not. `OPREC_TEST_PYTHON` and
//! `OPREC_TEST_NODE` name other interpreters.

mod common;
mod rig;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use rig::{Pool, Proc, Rig, RigKind, poll};
use serde_json::Value;

/// Operations enqueued from SQL for the timing, one every `SPREAD`.
const TIMED: usize = 20;
const SPREAD: Duration = Duration::from_millis(97);

fn repo() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    root.canonicalize().unwrap_or(root)
}

/// The Python interpreter with psycopg, or a failure naming how to install it.
fn python() -> PathBuf {
    let dir = repo().join("examples/producers/python");
    let python = std::env::var_os("OPREC_TEST_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| dir.join(".venv/bin/python"));
    let ok = Command::new(&python)
        .args(["-c", "import psycopg"])
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        ok,
        "the Python producer's dependencies are missing ({} cannot import psycopg): run \
         `python3 -m venv {venv} && {venv}/bin/pip install -r {req}` (scripts/test does), or \
         point OPREC_TEST_PYTHON at an interpreter that has them",
        python.display(),
        venv = dir.join(".venv").display(),
        req = dir.join("requirements.txt").display(),
    );
    python
}

/// Node.js with the producer's `pg` installed, or a failure naming how to install it.
fn node() -> PathBuf {
    let dir = repo().join("examples/producers/node");
    let node = std::env::var_os("OPREC_TEST_NODE")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("node"));
    let ok = Command::new(&node)
        .current_dir(&dir)
        .args(["-e", "require('pg')"])
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        ok,
        "the Node producer's dependencies are missing ({} cannot require('pg') in {}): run \
         `npm ci` there (scripts/test does), or point OPREC_TEST_NODE at another node",
        node.display(),
        dir.display(),
    );
    node
}

/// Runs a producer to its end (30 s at most).
fn run(mut command: Command, what: &str) -> Output {
    let child = command
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    let out = child.wait_with_output().expect("wait");
    eprintln!(
        "[sql_enqueue] {what}: {}\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The producer `which` ("python" or "node") against the rig's schema, placing order `order`
/// of `kind`: its exit status, stdout and stderr. Python finds the schema through the URL's
/// `options`, Node through `PGOPTIONS`.
fn producer(rig: &Rig, which: &str, kind: &str, order: i64) -> Output {
    let (server, schema) = rig.schema.clone().expect("a PostgreSQL rig");
    let order = order.to_string();
    let mut c = match which {
        "python" => {
            let mut c = Command::new(python());
            c.current_dir(repo().join("examples/producers/python"))
                .arg("enqueue.py")
                .env("OPREC_DATABASE_URL", &rig.db);
            c
        }
        _ => {
            let mut c = Command::new(node());
            c.current_dir(repo().join("examples/producers/node"))
                .arg("enqueue.js")
                .env("OPREC_DATABASE_URL", &server)
                .env("PGOPTIONS", format!("-c search_path={schema}"));
            c
        }
    };
    c.env_remove("DATABASE_URL")
        .args(["--kind", kind, "--order", &order]);
    run(c, &format!("{which} producer, {kind} order {order}"))
}

/// The operation ids the rig's own pool enqueues with `oprec_enqueue`, one every `SPREAD`, each
/// in its own transaction.
fn enqueue_from_sql(rig: &Rig, n: usize) -> Vec<uuid::Uuid> {
    let Some(Pool::Pg(pool)) = rig.pool.as_ref() else {
        panic!("a PostgreSQL rig");
    };
    (0..n)
        .map(|i| {
            std::thread::sleep(SPREAD);
            rig.rt
                .block_on(
                    sqlx::query_scalar(
                        "SELECT oprec_enqueue('demo.noop', jsonb_build_object('n', $1::int), \
                         jsonb_build_object('idempotency_key', 'timed-' || $1))",
                    )
                    .bind(i as i32)
                    .fetch_one(pool),
                )
                .expect("oprec_enqueue")
        })
        .collect()
}

/// The worker, started and waited for until its kinds are published (what `oprec_enqueue`
/// needs).
fn started_worker(rig: &Rig) -> Proc {
    let mut w = rig.spawn("worker", &["worker", "--demo"]);
    w.wait_until_up();
    let published = poll(Duration::from_secs(15), Duration::from_millis(50), || {
        (rig.scalar("SELECT count(*) FROM operation_kinds WHERE published_by LIKE 'worker-%'")
            == common::DEMO_KINDS.len() as i64)
            .then_some(())
    });
    assert!(
        published.is_some(),
        "the worker did not publish the demo kinds: {:?}\n{}",
        rig.counts("SELECT kind, 1::int8 FROM operation_kinds"),
        rig.dump()
    );
    w
}

fn sql_enqueued_operations_are_drained(kind: RigKind) {
    let rig = Rig::new(
        kind,
        "producers in Python and Node, and oprec_enqueue from SQL",
    );
    // Checked before the worker starts: a missing dependency fails here, naming its command.
    python();
    node();
    let mut worker = started_worker(&rig);

    // The producers: order N committed with its operation, N+1 rolled back, N's key repeated.
    let mut committed = Vec::new();
    for (which, order) in [("python", 1000), ("node", 2000)] {
        let out = producer(&rig, which, "demo.noop", order);
        assert!(out.status.success(), "{which} producer failed");
        let said: Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{which} producer printed no JSON ({e})"));
        let id = said["committed"]["operation"]
            .as_str()
            .expect("operation id")
            .to_owned();
        assert_eq!(said["repeat"], said["committed"]["operation"], "{said}");
        assert_eq!(said["rolled_back"]["order"], order + 1, "{said}");
        committed.push((which, order, id));

        // A kind no worker published is refused with OQ001, the known kinds named; nothing of
        // its order is left.
        let refused = producer(&rig, which, "shipment.create", order + 10);
        let err = String::from_utf8_lossy(&refused.stderr);
        assert_eq!(refused.status.code(), Some(2), "{which}: {err}");
        assert!(
            err.contains("OQ001")
                && err.contains("unknown kind \"shipment.create\"; known kinds: demo.crash"),
            "{which}: {err}"
        );
    }
    assert_eq!(
        rig.scalar("SELECT count(*) FROM orders"),
        2,
        "only the committed orders"
    );
    assert_eq!(
        rig.scalar(
            "SELECT count(*) FROM operations WHERE idempotency_key IN \
             ('order-1001', 'order-2001', 'order-1010', 'order-2010')"
        ),
        0,
        "no operation of a rolled-back or refused order"
    );

    // Straight from SQL, at moments spread over two scheduler passes.
    let timed = enqueue_from_sql(&rig, TIMED);
    let total = (TIMED + committed.len()) as i64;
    let drained = poll(Duration::from_secs(30), Duration::from_millis(100), || {
        (rig.scalar("SELECT count(*) FROM operations WHERE status = 'succeeded'") == total)
            .then_some(())
    });
    assert!(
        drained.is_some(),
        "not drained within 30 s: {:?}\n{}",
        rig.statuses(),
        rig.dump()
    );
    for (which, order, id) in &committed {
        let (status, _, outcomes, _) = rig.history(id);
        assert_eq!(
            (status.as_str(), outcomes),
            ("succeeded", vec!["succeeded".to_owned()]),
            "{which} order {order}"
        );
    }
    assert_eq!(
        rig.scalar("SELECT count(*) FROM operation_attempts"),
        total,
        "one attempt each"
    );

    // From the enqueue to the first attempt's claim, in milliseconds.
    let ids: Vec<String> = timed.iter().map(|id| format!("'{id}'")).collect();
    let mut waits: Vec<i64> = rig
        .counts(&format!(
            "SELECT o.id::text, (extract(epoch FROM a.claimed_at - o.created_at) * 1000)::int8 \
             FROM operations o JOIN operation_attempts a ON a.operation_id = o.id \
             WHERE o.id IN ({})",
            ids.join(", ")
        ))
        .into_iter()
        .map(|(_, ms)| ms)
        .collect();
    waits.sort_unstable();
    assert_eq!(waits.len(), TIMED);
    let (min, median, max) = (waits[0], waits[TIMED / 2], waits[TIMED - 1]);

    // Nobody published a wake-up but the scheduler (brokers), or nobody at all (poll-only).
    let never_woken = rig.scalar("SELECT count(*) FROM operations WHERE last_woken_at IS NULL");
    worker.sigterm();
    worker
        .wait_for_exit(Duration::from_secs(30))
        .expect("the worker drains and stops");
    let summary = worker.stdout();
    let published: i64 = summary
        .rsplit("published ")
        .next()
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no published count in {summary}"));
    match kind {
        RigKind::PostgresPoll => {
            assert_eq!(never_woken, total, "poll-only: claimed without wake-ups");
            assert_eq!(published, 0, "{summary}");
        }
        _ => {
            assert_eq!(never_woken, 0, "the scheduler marked each one woken");
            assert!(
                published >= total,
                "the scheduler published them: {summary}"
            );
        }
    }
    rig.report(&format!(
        "{TIMED} operations enqueued with oprec_enqueue, one every {} ms, attempted {min} ms \
         (fastest), {median} ms (median), {max} ms (slowest) after their enqueue; wake-ups \
         published by the worker's scheduler: {published}",
        SPREAD.as_millis()
    ));
    // The scheduler passes every second, a poll-only worker polls every half second when idle.
    assert!(
        max < 5_000,
        "an operation enqueued from SQL waited {max} ms for its first attempt: {waits:?}"
    );
}

#[test]
fn sql_enqueued_operations_are_drained_poll_only() {
    sql_enqueued_operations_are_drained(RigKind::PostgresPoll);
}

#[test]
fn sql_enqueued_operations_are_drained_on_redis() {
    sql_enqueued_operations_are_drained(RigKind::PostgresRedis);
}

#[test]
fn sql_enqueued_operations_are_drained_on_rabbitmq() {
    sql_enqueued_operations_are_drained(RigKind::PostgresAmqp);
}
