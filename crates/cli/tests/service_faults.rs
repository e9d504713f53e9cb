//! Service faults in the middle of a run, on private servers (`oprec_testkit::services`) so the
//! shared PostgreSQL, Redis and RabbitMQ are never touched:
//!
//! - PostgreSQL stopped for a few seconds and started again: the workers reconnect by themselves,
//!   nothing is left `running`, every operation finishes;
//! - Redis killed and started empty (a restart without persistence), and the RabbitMQ node
//!   restarted: every operation still finishes, claimed from the store while the broker is away
//!   and re-woken by the scheduler within its re-wake interval of the broker's return;
//! - the broker down for 30 s mid-drain (Redis, RabbitMQ): `oprec enqueue` still commits, and
//!   the workers keep draining by polling the store until it is back, then take wake-ups again.
//!
//! Each run is `demo.effect` operations (20 ms before the effect) under two worker processes; at
//! the end every operation has succeeded with exactly one effect row and one attempt row per
//! attempt, the last one succeeded.

#![cfg(unix)]

mod common;
mod rig;

use std::time::{Duration, Instant};

use oprec_testkit::services::{PrivatePostgres, PrivateRabbit, PrivateRedis};
use rig::{Proc, Rig, RigKind, Servers, poll};

/// The payload: long enough that a run lasts a few seconds, and a fault lands in its middle.
const PAYLOAD: &str = r#"{"sleep_before_ms": 20}"#;

/// Two workers with a re-wake interval of `rewake`, one started after the other (both create
/// `demo_effects` at start-up).
fn workers(rig: &Rig, rewake: &str) -> Vec<Proc> {
    ["sfa", "sfb"]
        .iter()
        .map(|name| {
            let mut w = rig.spawn(
                name,
                &[
                    "worker",
                    "--demo",
                    "--lease",
                    "3s",
                    "--concurrency",
                    "4",
                    "--rewake-after",
                    rewake,
                ],
            );
            w.wait_until_up();
            w
        })
        .collect()
}

fn enqueue(rig: &Rig, n: i64) {
    enqueue_payload(rig, n, PAYLOAD);
}

fn enqueue_payload(rig: &Rig, n: i64, payload: &str) {
    rig.enqueue_count("demo.effect", payload, n);
}

fn succeeded(rig: &Rig) -> i64 {
    rig.scalar("SELECT count(*) FROM operations WHERE status = 'succeeded'")
}

/// The database's clock, in milliseconds since the epoch.
fn db_now_ms(rig: &Rig) -> i64 {
    rig.scalar("SELECT CAST(extract(epoch FROM clock_timestamp()) * 1000 AS BIGINT)")
}

/// Waits (60 s at most) until at least `n` operations have succeeded: the run is under way.
fn wait_for_progress(rig: &Rig, n: i64) {
    let going = poll(Duration::from_secs(60), Duration::from_millis(50), || {
        (succeeded(rig) >= n).then_some(())
    });
    assert!(
        going.is_some(),
        "the run never got going: {:?}",
        rig.statuses()
    );
}

/// What the end of a run showed.
struct Tally {
    attempts: i64,
    vanished: i64,
    errors: i64,
}

/// Waits (up to `limit`) for all `ops` operations to end, checks the workers are still alive,
/// stops them with SIGTERM, and asserts the run's end state: all succeeded, none running, one
/// effect each, the history complete.
fn finish(rig: &Rig, workers: &mut [Proc], ops: i64, limit: Duration) -> Tally {
    let done = poll(limit, Duration::from_millis(200), || {
        (succeeded(rig) == ops).then_some(())
    });
    assert!(
        done.is_some(),
        "not every operation finished in {limit:?}: {:?}",
        rig.statuses()
    );
    for w in workers.iter_mut() {
        assert!(
            matches!(w.child.try_wait(), Ok(None)),
            "{} exited during the fault: {}",
            w.name,
            w.stderr()
        );
        w.sigterm();
        let Some(status) = w.wait_for_exit(Duration::from_secs(30)) else {
            panic!("{} did not stop after SIGTERM", w.name);
        };
        assert!(status.success(), "{}: {status}", w.name);
    }
    assert_eq!(rig.statuses(), [("succeeded".to_owned(), ops)]);
    assert_eq!(rig.running(), 0);
    let effects = rig.scalar("SELECT count(*) FROM demo_effects");
    let matched = rig.scalar(
        "SELECT count(*) FROM operations o JOIN demo_effects e ON e.effect_key = o.remote_id",
    );
    assert_eq!(
        (effects, matched),
        (ops, ops),
        "one effect row per operation"
    );
    let incomplete = rig.scalar(
        "SELECT count(*) FROM operations o WHERE o.attempt <> \
         (SELECT count(DISTINCT a.attempt) FROM operation_attempts a WHERE a.operation_id = o.id)",
    );
    assert_eq!(incomplete, 0, "an attempt without its history row");
    let last_not_success = rig.scalar(
        "SELECT count(*) FROM operation_attempts a JOIN operations o ON o.id = a.operation_id \
         WHERE a.attempt = o.attempt AND a.outcome <> 'succeeded'",
    );
    assert_eq!(last_not_success, 0);
    let outcome = |o: &str| {
        rig.scalar(&format!(
            "SELECT count(*) FROM operation_attempts WHERE outcome = '{o}'"
        ))
    };
    Tally {
        attempts: rig.scalar("SELECT count(*) FROM operation_attempts"),
        vanished: outcome("vanished"),
        errors: outcome("error"),
    }
}

/// PostgreSQL stopped (fast shutdown: every session cut) in the middle of a run, down for
/// 3 s, started again. The workers reconnect on their own and both claim again; nothing is left
/// running; every operation finishes once.
#[test]
fn postgres_restarted_mid_run() {
    const OPS: i64 = 1500;
    let pg = PrivatePostgres::start();
    let rig = Rig::on(
        RigKind::PostgresRedis,
        "postgres_restarted_mid_run",
        Servers {
            postgres: pg.url(),
            ..Servers::shared()
        },
    );
    enqueue(&rig, OPS);
    let mut ws = workers(&rig, "3s");
    wait_for_progress(&rig, OPS / 5);
    let at_stop = succeeded(&rig);
    pg.stop();
    std::thread::sleep(Duration::from_secs(3));
    pg.start_again();
    let back = db_now_ms(&rig);
    let tally = finish(&rig, &mut ws, OPS, Duration::from_secs(120));
    // Both workers reconnected: each claimed again after the restart.
    for name in ["sfa", "sfb"] {
        let claims = rig.scalar(&format!(
            "SELECT count(*) FROM operation_attempts WHERE worker_id LIKE '{name}-%' \
             AND claimed_at > to_timestamp({back} / 1000.0)"
        ));
        assert!(claims > 0, "{name} claimed nothing after the restart");
    }
    rig.report(&format!(
        "faults injected 1 PostgreSQL restart (down 3 s, {at_stop} of {OPS} done before), \
         operations {OPS}, lost 0, duplicate effects 0, running left 0, attempts {} \
         ({} vanished, {} failed on the outage and retried)",
        tally.attempts, tally.vanished, tally.errors
    ));
    drop(rig);
    drop(pg);
}

/// The broker-restart scenario: `restart` kills the broker in the middle of a run and brings it
/// back, its wake-ups lost (Redis without persistence) or kept (RabbitMQ's durable queue). While
/// it is away the workers claim from the store; once it answers
/// again (a probe a second) they take wake-ups again, and the scheduler (a pass a second, re-wake
/// interval 3 s) re-wakes what the broker lost. So every claim made more than the probe and 2 s
/// of slack after the return follows a wake-up made after the loss, and the first of those comes
/// within the re-wake interval, the scheduler's look and 3 s of slack for a loaded machine.
///
/// Work must be left when the broker is back, however long its restart takes: the workers drain
/// at full speed from the store while it is away, and a RabbitMQ node's stop and boot took over
/// 15 s on a loaded CI machine (3,000 operations of 60 ms were all done by then). So the
/// operations are slower here (150 ms: about 56 s of work for the two workers' 8 handlers) and
/// the broker goes down as soon as the run is under way (5% done), which leaves about 50 s.
fn broker_restarted_mid_run(rig: &Rig, what: &str, loses_wake_ups: bool, restart: impl FnOnce()) {
    const OPS: i64 = 3000;
    const REWAKE_S: i64 = 3;
    const SETTLE_MS: i64 = 3000;
    enqueue_payload(rig, OPS, r#"{"sleep_before_ms": 150}"#);
    let mut ws = workers(rig, &format!("{REWAKE_S}s"));
    wait_for_progress(rig, OPS / 20);
    let at_restart = succeeded(rig);
    let down = db_now_ms(rig);
    restart();
    let back = db_now_ms(rig);
    let tally = finish(rig, &mut ws, OPS, Duration::from_secs(180));
    // Claims made once the workers were back on wake-ups followed a wake-up made after the loss:
    // by the scheduler (nothing else publishes; the enqueues were all before).
    let settled = back + SETTLE_MS;
    let claimed_after = rig.scalar(&format!(
        "SELECT count(*) FROM operation_attempts WHERE claimed_at > to_timestamp({settled} / 1000.0)"
    ));
    let stale_wake = rig.scalar(&format!(
        "SELECT count(*) FROM operation_attempts a JOIN operations o ON o.id = a.operation_id \
         WHERE a.claimed_at > to_timestamp({settled} / 1000.0) \
           AND (o.last_woken_at IS NULL OR o.last_woken_at < to_timestamp({down} / 1000.0))"
    ));
    assert!(
        claimed_after > 0,
        "the run ended before the workers were back on wake-ups (restart at {at_restart} of \
         {OPS}): it proves nothing about the re-wake"
    );
    if !loses_wake_ups {
        // A durable queue of persistent messages keeps its wake-ups through the restart: the
        // scheduler trusts them (the broker's depth says they are there) and re-wakes nothing.
        rig.report(&format!(
            "faults injected 1 {what}, down {:.1} s ({at_restart} of {OPS} done before), \
             operations {OPS}, lost 0, duplicate effects 0, {claimed_after} claimed after the \
             workers were back on wake-ups, {stale_wake} of them on wake-ups kept through the \
             restart, attempts {} ({} vanished, {} failed)",
            (back - down) as f64 / 1000.0,
            tally.attempts,
            tally.vanished,
            tally.errors
        ));
        return;
    }
    assert_eq!(
        stale_wake, 0,
        "claimed on wake-ups after the broker's return without a wake-up after its loss"
    );
    let first_claim = rig.scalar(&format!(
        "SELECT CAST(extract(epoch FROM min(a.claimed_at)) * 1000 AS BIGINT) \
         FROM operation_attempts a JOIN operations o ON o.id = a.operation_id \
         WHERE a.claimed_at > to_timestamp({back} / 1000.0) \
           AND o.last_woken_at >= to_timestamp({down} / 1000.0)"
    ));
    let waited_ms = first_claim - back;
    assert!(
        waited_ms <= (REWAKE_S + 3) * 1000 + SETTLE_MS,
        "the first claim on a wake-up made after the loss came {waited_ms} ms after the broker's \
         return, past the re-wake interval of {REWAKE_S} s"
    );
    rig.report(&format!(
        "faults injected 1 {what}, down {:.1} s ({at_restart} of {OPS} done before), operations \
         {OPS}, lost 0, duplicate effects 0, first claim {waited_ms} ms after the return \
         (re-wake interval {REWAKE_S} s), attempts {} ({} vanished, {} failed)",
        (back - down) as f64 / 1000.0,
        tally.attempts,
        tally.vanished,
        tally.errors
    ));
}

/// The broker restarted, Redis: killed and started empty (its stream, group and wake-ups gone).
#[test]
fn redis_restarted_without_persistence_mid_run() {
    let mut redis = PrivateRedis::start();
    let url = redis.url();
    let rig = Rig::on(
        RigKind::PostgresRedis,
        "redis_restarted_without_persistence_mid_run",
        Servers {
            redis: url,
            ..Servers::shared()
        },
    );
    broker_restarted_mid_run(&rig, "Redis restart without persistence", true, || {
        redis.restart();
    });
    drop(rig);
}

/// The broker restarted, RabbitMQ: the node stopped and started again (every connection cut).
#[test]
fn rabbitmq_restarted_mid_run() {
    let mut rabbit = PrivateRabbit::start();
    let url = rabbit.url();
    let rig = Rig::on(
        RigKind::PostgresAmqp,
        "rabbitmq_restarted_mid_run",
        Servers {
            amqp: url,
            ..Servers::shared()
        },
    );
    broker_restarted_mid_run(&rig, "RabbitMQ node restart", false, || {
        rabbit.restart();
    });
    drop(rig);
}

/// The broker down for 30 s in the middle of a drain. Enqueues made meanwhile commit (exit 0, the
/// rows there at once), and the workers keep draining from the store at the poll interval: every
/// operation, those enqueued during the outage included, finishes before the broker is back.
/// When it returns they go back to wake-ups, and what is enqueued then finishes too.
fn broker_down_mid_drain(rig: &Rig, what: &str, stop: impl FnOnce(), start: impl FnOnce()) {
    const OPS: i64 = 2000;
    const DURING: i64 = 100;
    const AFTER: i64 = 100;
    const DOWN: Duration = Duration::from_secs(30);
    enqueue(rig, OPS);
    let mut ws = workers(rig, "3s");
    wait_for_progress(rig, OPS / 10);
    let at_stop = succeeded(rig);
    let stopped = Instant::now();
    stop();
    // Enqueues while the broker is down: each commits, and quickly.
    let mut slowest = Duration::ZERO;
    for _ in 0..5 {
        let t = Instant::now();
        enqueue(rig, DURING / 5);
        slowest = slowest.max(t.elapsed());
    }
    let total = OPS + DURING;
    assert_eq!(
        rig.scalar("SELECT count(*) FROM operations"),
        total,
        "enqueues during the outage committed"
    );
    // The drain goes on without the broker.
    let drained = poll(
        DOWN.saturating_sub(stopped.elapsed()),
        Duration::from_millis(100),
        || (succeeded(rig) == total).then(|| stopped.elapsed()),
    );
    let at_return = succeeded(rig);
    assert!(
        drained.is_some(),
        "the workers stalled while the broker was down: {at_stop} of {OPS} done when it went \
         down, {at_return} of {total} after {DOWN:?}"
    );
    for w in &ws {
        assert!(
            w.stderr().contains("the broker does not answer"),
            "{} did not say it fell back to polling: {}",
            w.name,
            w.stderr()
        );
    }
    std::thread::sleep(DOWN.saturating_sub(stopped.elapsed()));
    let down_for = stopped.elapsed();
    start();
    let back = Instant::now();
    enqueue(rig, AFTER);
    // Back on wake-ups: the workers take the wake-ups published after the return (the only
    // consumers of the broker), whether or not a poll claimed their operations first.
    let consumed = poll(Duration::from_secs(30), Duration::from_millis(200), || {
        let depth = rig.oprec_json(&["transport", "depth", "--json"]);
        (depth["depth"].as_u64() == Some(0)).then(|| back.elapsed())
    });
    assert!(
        consumed.is_some(),
        "the workers did not go back to wake-ups within 30 s of the broker's return: {}",
        rig.oprec_json(&["transport", "depth", "--json"])
    );
    let tally = finish(rig, &mut ws, total + AFTER, Duration::from_secs(120));
    rig.report(&format!(
        "faults injected 1 {what} outage of {:.0} s ({DURING} enqueued during it, slowest batch \
         {:.1} s; {at_stop} of {OPS} done when it began, all {total} done {:.1} s into it by \
         polling the store), the broker's backlog consumed {:.1} s after its return, {AFTER} \
         enqueued after its return done {:.1} s after it, operations \
         {}, lost 0, duplicate effects 0, attempts {} ({} vanished, {} failed)",
        down_for.as_secs_f64(),
        slowest.as_secs_f64(),
        drained.unwrap_or_default().as_secs_f64(),
        consumed.unwrap_or_default().as_secs_f64(),
        back.elapsed().as_secs_f64(),
        total + AFTER,
        tally.attempts,
        tally.vanished,
        tally.errors
    ));
}

/// The broker down for 30 s mid-drain, Redis.
#[test]
fn redis_unreachable_mid_drain() {
    let redis = std::cell::RefCell::new(PrivateRedis::start());
    let url = redis.borrow().url();
    let rig = Rig::on(
        RigKind::PostgresRedis,
        "redis_unreachable_mid_drain",
        Servers {
            redis: url,
            ..Servers::shared()
        },
    );
    broker_down_mid_drain(
        &rig,
        "Redis",
        || redis.borrow_mut().stop(),
        || redis.borrow_mut().start_again(),
    );
    drop(rig);
}

/// The broker down for 30 s mid-drain, RabbitMQ.
#[test]
fn rabbitmq_unreachable_mid_drain() {
    let rabbit = std::cell::RefCell::new(PrivateRabbit::start());
    let url = rabbit.borrow().url();
    let rig = Rig::on(
        RigKind::PostgresAmqp,
        "rabbitmq_unreachable_mid_drain",
        Servers {
            amqp: url,
            ..Servers::shared()
        },
    );
    broker_down_mid_drain(
        &rig,
        "RabbitMQ",
        || rabbit.borrow_mut().stop(),
        || rabbit.borrow_mut().start_again(),
    );
    drop(rig);
}
