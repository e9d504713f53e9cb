//! A fleet, not a process: several real `oprec worker` processes against one PostgreSQL and one
//! broker. One of them leads maintenance at a time (`oprec workers` says which); when the leader
//! is SIGKILLed another takes over once its lease has run out; and every promotion to dead is
//! announced once, however many workers run.

mod common;
mod rig;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::http::StatusCode;
use axum::routing::post;
use axum::{Json, Router};
use rig::{Rig, RigKind, poll};
use serde_json::Value;

/// The workers `oprec workers --json` lists, and the one marked as the maintenance leader.
fn leader(rig: &Rig) -> (usize, Option<String>) {
    let v = rig.oprec_json(&["workers", "--json"]);
    let workers = v["workers"].as_array().cloned().unwrap_or_default();
    let leaders: Vec<String> = workers
        .iter()
        .filter(|w| w["leader"] == true)
        .map(|w| w["id"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert!(leaders.len() <= 1, "two leaders at once: {leaders:?}");
    if let Some(l) = leaders.first() {
        assert_eq!(v["leader"]["holder"].as_str(), Some(l.as_str()), "{v}");
    }
    (workers.len(), leaders.into_iter().next())
}

/// The worker that leads once `before` does not, 30 s at most.
fn leader_other_than(rig: &Rig, before: &str) -> String {
    poll(
        Duration::from_secs(30),
        Duration::from_millis(100),
        || match leader(rig) {
            (_, Some(l)) if l != before => Some(l),
            _ => None,
        },
    )
    .unwrap_or_else(|| panic!("no worker but {before} led within 30 s"))
}

#[test]
fn one_worker_leads_maintenance_and_another_takes_over_after_a_sigkill() {
    let rig = Rig::new(RigKind::PostgresRedis, "leader takeover");
    let mut workers: HashMap<String, rig::Proc> = HashMap::new();
    for name in ["fleet-a", "fleet-b", "fleet-c"] {
        let mut w = rig.worker(name, &[]);
        w.wait_until_up();
        workers.insert(name.to_owned(), w);
    }
    let first = poll(
        Duration::from_secs(30),
        Duration::from_millis(200),
        || match leader(&rig) {
            (3, Some(l)) => Some(l),
            _ => None,
        },
    )
    .expect("three workers, one of them leading, within 30 s");
    // The worker id is "$HOSTNAME-$PID"; the rig names each process's HOSTNAME.
    let name = first.rsplit_once('-').map(|(h, _)| h.to_owned()).unwrap();
    let killed_at = Instant::now();
    workers
        .get_mut(&name)
        .expect("the leader is ours")
        .sigkill();
    let next = leader_other_than(&rig, &first);
    let took = killed_at.elapsed();
    // The lease is 6 s and the others ask every 2 s: the takeover comes within about 8 s (the
    // bound leaves room for a loaded machine).
    assert!(took < Duration::from_secs(20), "the takeover took {took:?}");
    rig.report(&format!(
        "leader {first} SIGKILLed; {next} led {:.1} s later",
        took.as_secs_f64()
    ));
    // A clean stop gives the leadership up at once: the next leader comes within a renewal.
    let name = next.rsplit_once('-').map(|(h, _)| h.to_owned()).unwrap();
    let w = workers.get_mut(&name).expect("the new leader is ours");
    let stopped_at = Instant::now();
    w.sigterm();
    w.wait_for_exit(Duration::from_secs(30))
        .expect("the leader drains and stops");
    let third = leader_other_than(&rig, &next);
    let took = stopped_at.elapsed();
    assert!(took < Duration::from_secs(20), "the handover took {took:?}");
    rig.report(&format!(
        "leader {next} stopped cleanly; {third} led {:.1} s later",
        took.as_secs_f64()
    ));
}

/// Every body the webhook received.
#[derive(Default)]
struct Hook {
    posts: Mutex<Vec<Value>>,
}

async fn receive(
    axum::extract::State(hook): axum::extract::State<Arc<Hook>>,
    Json(body): Json<Value>,
) -> StatusCode {
    hook.posts.lock().unwrap().push(body);
    StatusCode::OK
}

#[test]
fn a_fleet_announces_each_death_once() {
    const DEATHS: usize = 300;
    let rt = tokio::runtime::Runtime::new().unwrap();
    let hook = Arc::new(Hook::default());
    let listener = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    let app = Router::new()
        .route("/hook", post(receive))
        .with_state(hook.clone());
    rt.spawn(async move { axum::serve(listener, app).await });

    let rig = Rig::new(RigKind::PostgresRedis, "announced once");
    let mut workers: Vec<rig::Proc> = ["hook-a", "hook-b", "hook-c"]
        .iter()
        .map(|n| rig.worker(n, &["--dead-letter-webhook", &url]))
        .collect();
    for w in &mut workers {
        w.wait_until_up();
    }
    rig.oprec_ok(&[
        "enqueue",
        "--kind",
        "demo.flaky",
        "--payload",
        r#"{"fail_times": 9, "class": "permanent"}"#,
        "--count",
        &DEATHS.to_string(),
    ]);
    let all = poll(Duration::from_secs(60), Duration::from_millis(200), || {
        (hook.posts.lock().unwrap().len() >= DEATHS).then_some(())
    });
    assert!(
        all.is_some(),
        "{} of {DEATHS} deaths announced in 60 s",
        hook.posts.lock().unwrap().len()
    );
    // A few more passes of every alerter: nothing is announced twice.
    std::thread::sleep(Duration::from_secs(5));
    let posts = hook.posts.lock().unwrap().clone();
    let mut ids: Vec<&str> = posts.iter().filter_map(|p| p["id"].as_str()).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), DEATHS, "every death announced");
    assert_eq!(posts.len(), DEATHS, "and each once, by three workers");
    rig.report(&format!(
        "{DEATHS} deaths, 3 workers: {} webhook posts",
        posts.len()
    ));
    for w in &workers {
        w.sigterm();
    }
    for w in &mut workers {
        w.wait_for_exit(Duration::from_secs(30));
    }
}

/// The time from `since` until the attempt rows outnumber `before` (a first claim), 20 s at most.
fn first_claim_after(rig: &Rig, before: i64, since: Instant) -> Option<Duration> {
    poll(Duration::from_secs(20), Duration::from_millis(20), || {
        (rig.scalar("SELECT count(*) FROM operation_attempts") > before).then(|| since.elapsed())
    })
}

/// Enqueues `n` `demo.effect` operations with an empty payload.
fn enqueue_effects(rig: &Rig, n: u32) {
    rig.oprec_ok(&[
        "enqueue",
        "--kind",
        "demo.effect",
        "--payload",
        "{}",
        "--count",
        &n.to_string(),
    ]);
}

/// Operator actions that make work eligible wake it on the scheduler's next pass, not after the
/// re-wake interval (30 s here, as in production): `resume` after a pause dropped the wake-ups,
/// and `transport purge` of a backlog whose wake-ups the workers never saw.
#[test]
fn resume_and_purge_wake_the_work_within_seconds() {
    let rig = Rig::new(RigKind::PostgresRedis, "resume and purge wake at once");
    let worker_args = ["worker", "--demo", "--rewake-after", "30s"];
    let mut w = rig.spawn("wake-a", &worker_args);
    w.wait_until_up();
    // Paused: the wake-ups published at enqueue reach the worker, which drops them.
    rig.oprec_ok(&["pause", "--kind", "demo.effect", "--actor", "test"]);
    enqueue_effects(&rig, 200);
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(
        rig.scalar("SELECT count(*) FROM operation_attempts"),
        0,
        "a paused kind was claimed"
    );
    let resumed_at = Instant::now();
    rig.oprec_ok(&["resume", "--kind", "demo.effect", "--actor", "test"]);
    let resume_wait =
        first_claim_after(&rig, 0, resumed_at).expect("a claim within 20 s of the resume");
    // The interval is 30 s: a claim within 10 s came from the resume's wake-up, not a re-wake.
    assert!(
        resume_wait < Duration::from_secs(10),
        "the first claim came {resume_wait:?} after the resume"
    );
    let all = poll(Duration::from_secs(30), Duration::from_millis(100), || {
        (rig.scalar("SELECT count(*) FROM operations WHERE status = 'succeeded'") == 200)
            .then(|| resumed_at.elapsed())
    })
    .expect("the 200 resumed operations finish within 30 s");

    // A stopped fleet, a backlog enqueued with its wake-ups, then purged: the next worker's
    // scheduler rebuilds it from the rows.
    w.sigterm();
    assert!(w.wait_for_exit(Duration::from_secs(30)).is_some());
    enqueue_effects(&rig, 200);
    let purged = rig.oprec_json(&["transport", "purge", "--yes", "--actor", "test", "--json"]);
    assert_eq!(purged["pending"], 200, "{purged}");
    assert_eq!(
        purged["rewake"], 200,
        "every pending operation is marked for a wake-up: {purged}"
    );
    let before = rig.scalar("SELECT count(*) FROM operation_attempts");
    let started_at = Instant::now();
    let mut w = rig.spawn("wake-b", &worker_args);
    w.wait_until_up();
    let purge_wait =
        first_claim_after(&rig, before, started_at).expect("a claim within 20 s of the start");
    assert!(
        purge_wait < Duration::from_secs(10),
        "the first claim after the purge came {purge_wait:?} after the worker started"
    );
    poll(Duration::from_secs(30), Duration::from_millis(100), || {
        (rig.scalar("SELECT count(*) FROM operations WHERE status = 'succeeded'") == 400)
            .then_some(())
    })
    .expect("the purged backlog finishes within 30 s");
    w.sigterm();
    assert!(w.wait_for_exit(Duration::from_secs(30)).is_some());
    rig.report(&format!(
        "re-wake interval 30 s; first claim {} ms after resume (200 done {:.1} s after it); \
         first claim {} ms after a worker started on a purged backlog",
        resume_wait.as_millis(),
        all.as_secs_f64(),
        purge_wait.as_millis()
    ));
}

/// The numbers after "published " and "wake-ups received " in a worker's closing line.
fn closing_counts(out: &str) -> (u64, u64) {
    let after = |label: &str| {
        out.rsplit_once(label)
            .and_then(|(_, rest)| {
                rest.split(|c: char| !c.is_ascii_digit())
                    .next()
                    .and_then(|n| n.parse().ok())
            })
            .unwrap_or_else(|| panic!("no {label:?} in the worker's closing line: {out}"))
    };
    (after("published "), after("wake-ups received "))
}

/// A saturated fleet: 600 operations of 100 ms each for four handlers (two workers of two), so
/// most wait several re-wake intervals (3 s) before a handler is free. Each is woken about once:
/// the enqueue's wake-up is trusted while the broker still holds it, instead of a duplicate per
/// interval queueing behind it.
/// On Redis and on RabbitMQ: the broker's backlog never holds much more than one wake-up per
/// waiting operation either.
fn saturated_fleet(kind: RigKind) {
    const OPS: u64 = 600;
    let rig = Rig::new(kind, "saturated wake-ups");
    let args = [
        "worker",
        "--demo",
        "--concurrency",
        "2",
        "--rewake-after",
        "3s",
    ];
    let mut workers: Vec<rig::Proc> = ["sat-a", "sat-b"]
        .iter()
        .map(|name| {
            let mut w = rig.spawn(name, &args);
            w.wait_until_up();
            w
        })
        .collect();
    let started = Instant::now();
    rig.oprec_ok(&[
        "enqueue",
        "--kind",
        "demo.effect",
        "--payload",
        r#"{"sleep_before_ms": 100}"#,
        "--count",
        &OPS.to_string(),
    ]);
    let mut deepest = 0u64;
    poll(Duration::from_secs(120), Duration::from_millis(250), || {
        let depth = rig.oprec_json(&["transport", "depth", "--json"]);
        deepest = deepest.max(depth["depth"].as_u64().unwrap_or_default());
        (rig.scalar("SELECT count(*) FROM operations WHERE status = 'succeeded'") == OPS as i64)
            .then_some(())
    })
    .expect("the 600 operations finish within 120 s");
    let took = started.elapsed();
    let (mut published, mut received) = (0, 0);
    for w in &mut workers {
        w.sigterm();
        assert!(w.wait_for_exit(Duration::from_secs(30)).is_some());
        let (p, r) = closing_counts(&w.stdout());
        published += p;
        received += r;
    }
    // The enqueue published one wake-up per operation; the workers' schedulers the rest.
    let total = OPS + published;
    let per_op = total as f64 / OPS as f64;
    rig.report(&format!(
        "{OPS} operations drained by 4 handlers in {:.1} s (re-wake interval 3 s): wake-ups \
         published {total} ({OPS} at enqueue + {published} by the scheduler) = {per_op:.3} per \
         operation; received {received}; deepest broker backlog {deepest}",
        took.as_secs_f64()
    ));
    assert!(
        took > Duration::from_secs(6),
        "the run was not saturated for two re-wake intervals ({took:?}): it proves nothing"
    );
    assert!(
        per_op <= 1.1,
        "{total} wake-ups for {OPS} operations ({per_op:.3} each)"
    );
    assert!(
        deepest <= OPS + OPS / 10,
        "the broker held {deepest} wake-ups for {OPS} operations: duplicates queued behind them"
    );
}

#[test]
fn a_saturated_fleet_publishes_about_one_wake_up_per_operation_on_redis() {
    saturated_fleet(RigKind::PostgresRedis);
}

#[test]
fn a_saturated_fleet_publishes_about_one_wake_up_per_operation_on_rabbitmq() {
    saturated_fleet(RigKind::PostgresAmqp);
}

/// The number of operations of `kind` with status `status`.
fn count(rig: &Rig, kind: &str, status: &str) -> i64 {
    rig.scalar(&format!(
        "SELECT count(*) FROM operations WHERE kind = '{kind}' AND status = '{status}'"
    ))
}

/// `release` and `redrive` wake what they make eligible on the scheduler's next pass too, not
/// after the re-wake interval (30 s): held operations released, and dead ones re-driven.
#[test]
fn release_and_redrive_wake_the_work_within_seconds() {
    let rig = Rig::new(RigKind::PostgresRedis, "release and redrive wake at once");
    let worker_args = ["worker", "--demo", "--rewake-after", "30s"];
    let mut w = rig.spawn("wake-r", &worker_args);
    w.wait_until_up();

    // Held: paused so that nothing is claimed before the quarantine, then held, then resumed
    // (which wakes nothing: none is pending).
    rig.oprec_ok(&["pause", "--kind", "demo.effect", "--actor", "test"]);
    enqueue_effects(&rig, 200);
    rig.oprec_ok(&[
        "quarantine",
        "--kind",
        "demo.effect",
        "--reason",
        "test",
        "--yes",
        "--actor",
        "test",
    ]);
    assert_eq!(count(&rig, "demo.effect", "held"), 200);
    rig.oprec_ok(&["resume", "--kind", "demo.effect", "--actor", "test"]);
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(
        rig.scalar("SELECT count(*) FROM operation_attempts"),
        0,
        "a held operation was claimed"
    );
    let released_at = Instant::now();
    rig.oprec_ok(&[
        "release",
        "--kind",
        "demo.effect",
        "--yes",
        "--actor",
        "test",
    ]);
    let release_wait =
        first_claim_after(&rig, 0, released_at).expect("a claim within 20 s of the release");
    assert!(
        release_wait < Duration::from_secs(10),
        "the first claim came {release_wait:?} after the release"
    );
    poll(Duration::from_secs(30), Duration::from_millis(100), || {
        (count(&rig, "demo.effect", "succeeded") == 200).then_some(())
    })
    .expect("the 200 released operations finish within 30 s");

    // Dead: a permanent failure on the first attempt.
    rig.oprec_ok(&[
        "enqueue",
        "--kind",
        "demo.flaky",
        "--payload",
        r#"{"fail_times": 1, "class": "permanent"}"#,
        "--count",
        "200",
    ]);
    poll(Duration::from_secs(30), Duration::from_millis(100), || {
        (count(&rig, "demo.flaky", "dead") == 200).then_some(())
    })
    .expect("the 200 flaky operations die within 30 s");
    let before = rig.scalar("SELECT count(*) FROM operation_attempts");
    let redriven_at = Instant::now();
    rig.oprec_ok(&[
        "redrive",
        "--kind",
        "demo.flaky",
        "--yes",
        "--actor",
        "test",
    ]);
    let redrive_wait =
        first_claim_after(&rig, before, redriven_at).expect("a claim within 20 s of the re-drive");
    assert!(
        redrive_wait < Duration::from_secs(10),
        "the first claim came {redrive_wait:?} after the re-drive"
    );
    w.sigterm();
    assert!(w.wait_for_exit(Duration::from_secs(30)).is_some());
    rig.report(&format!(
        "re-wake interval 30 s; first claim {} ms after release, {} ms after re-drive",
        release_wait.as_millis(),
        redrive_wait.as_millis()
    ));
}

/// An import beside a running worker (re-wake interval 30 s, as in production): the operations
/// are inserted already marked woken and their wake-ups published after the commit, so none waits
/// for a re-wake (the import used to mark them in a second statement, whose row locks made the
/// worker's claims skip them: a quarter waited 30 s).
#[test]
fn an_import_beside_a_running_worker_waits_for_no_re_wake() {
    const JOBS: usize = 2000;
    let rig = Rig::new(RigKind::PostgresRedis, "import wakes at once");
    let url = rig::redis_url();
    let key = format!("oprec:test:import:{}", uuid::Uuid::now_v7().simple());
    let _list = common::RedisKeyGuard {
        url: url.clone(),
        key: key.clone(),
    };
    let mut conn = redis::Client::open(url.as_str())
        .and_then(|c| c.get_connection())
        .unwrap_or_else(|e| panic!("Redis ({url}) is required: {e}"));
    let jobs: Vec<String> = (0..JOBS)
        .map(|i| format!(r#"{{"id": "legacy-{i}", "n": {i}}}"#))
        .collect();
    for chunk in jobs.chunks(500) {
        let _: () = redis::cmd("RPUSH")
            .arg(&key)
            .arg(chunk)
            .query(&mut conn)
            .expect("RPUSH");
    }
    let mut w = rig.spawn("import-w", &["worker", "--demo", "--rewake-after", "30s"]);
    w.wait_until_up();
    let started = Instant::now();
    let v = rig.oprec_json(&[
        "import",
        "--from",
        &url,
        "--list",
        &key,
        "--kind",
        "demo.noop",
        "--then-purge",
        "--json",
    ]);
    assert_eq!(v["imported"], JOBS as u64, "{v}");
    let done = poll(Duration::from_secs(20), Duration::from_millis(100), || {
        (rig.scalar("SELECT count(*) FROM operations WHERE status = 'succeeded'") == JOBS as i64)
            .then(|| started.elapsed())
    });
    let waits = rig.counts(
        "SELECT 'max', CAST(extract(epoch FROM max(a.claimed_at - o.created_at)) * 1000 AS BIGINT) \
         FROM operation_attempts a JOIN operations o ON o.id = a.operation_id",
    );
    assert!(
        done.is_some(),
        "the import's operations were not all done 20 s after it started (re-wake interval 30 s): \
         {:?}, longest wait {waits:?} ms",
        rig.statuses()
    );
    w.sigterm();
    assert!(w.wait_for_exit(Duration::from_secs(30)).is_some());
    rig.report(&format!(
        "{JOBS} legacy jobs imported beside a running worker (re-wake interval 30 s): all done \
         {:.1} s after the import began; longest wait from insert to claim {} ms",
        done.unwrap_or_default().as_secs_f64(),
        waits.first().map(|w| w.1).unwrap_or_default()
    ));
}
