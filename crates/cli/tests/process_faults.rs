//! Process-level faults, with the real `oprec` binary run as separate worker processes on three
//! rigs: PostgreSQL + Redis Streams, PostgreSQL + RabbitMQ, and SQLite poll-only (the in-memory
//! transport cannot cross processes).
//!
//! - a worker SIGKILLed mid-handler: the lease expires, a second worker retries, one `vanished`
//!   attempt then `succeeded`;
//! - `demo.crash` under a restarting worker: dead (`crash_loop`) after exactly `--vanish-limit`
//!   isolated vanished attempts;
//! - suspect isolation: one `demo.crash` among 40 `demo.effect` under a restarting worker: only
//!   the culprit ends dead (`crash_loop`), the 40 innocent operations succeed;
//! - SIGTERM during work: the worker drains and exits 0 by itself, short work finishes, long work
//!   is released, nothing is left `running`;
//! - `demo.effect` × 300 under two workers, one SIGKILLed and restarted twice: nothing lost, one
//!   effect per operation, every vanished attempt in the history;
//! - a worker SIGKILLed before an effect and after it (before the outcome): one effect each;
//! - a zombie worker (SIGSTOP past its lease, another finishes, SIGCONT): its heartbeat and its
//!   completion are refused and reported as stale claims, and change nothing (PostgreSQL rigs).
//!
//! Each test gets a fresh PostgreSQL schema (named through `?options=-csearch_path%3D...` on the
//! URL the binary gets) or SQLite file, and a fresh Redis stream (`?stream=`) or RabbitMQ queue
//! (`?queue=`, deleted by the broker two minutes after its last consumer left). Services:
//! `OPREC_TEST_DATABASE_URL` (default `postgres://postgres@127.0.0.1:5432/test`),
//! `OPREC_TEST_REDIS_URL` (default `redis://127.0.0.1:6379`, database 9 unless the URL names
//! one), `OPREC_TEST_AMQP_URL` (default `amqp://guest:guest@127.0.0.1:5672/%2f`). Every wait has a
//! deadline, and every child process is killed when its guard drops, on failure too. A failing
//! test keeps its schema or folder and prints where, with the tail of every process's log.

#![cfg(unix)]

mod common;
mod rig;

use std::os::unix::process::ExitStatusExt;
use std::time::{Duration, Instant};

use rig::{Rig, RigKind, SIGABRT, SIGKILL, effect_of, poll};

/// Scenario 1: a worker SIGKILLed mid-handler: the lease (2 s) expires, a second worker's rescuer records
/// the attempt `vanished`, the second worker retries it and it succeeds.
fn sigkill_mid_handler(kind: RigKind) {
    let rig = Rig::new(kind, "sigkill_mid_handler");
    let id = rig.enqueue("demo.slow", r#"{"ms": 2500}"#);
    let mut first = rig.worker("pf-first", &["--lease", "2s"]);
    let running = poll(Duration::from_secs(15), Duration::from_millis(20), || {
        (rig.running() == 1).then_some(())
    });
    assert!(running.is_some(), "never claimed");
    // Mid-handler: the claim is committed and the handler sleeps for 2.5 s.
    std::thread::sleep(Duration::from_millis(300));
    let killed = first.sigkill();
    assert_eq!(killed.signal(), Some(SIGKILL));
    assert_eq!(rig.running(), 1, "no outcome was written: still running");

    let mut second = rig.worker("pf-second", &["--lease", "2s", "--exit-when-idle"]);
    let Some(status) = second.wait_for_exit(Duration::from_secs(30)) else {
        panic!("the second worker did not go idle");
    };
    assert!(status.success(), "{status}");
    let summary = second.stdout();
    assert!(
        summary.contains("succeeded 1") && summary.contains("vanished 1"),
        "{summary}"
    );

    let (status, _, outcomes, workers) = rig.history(&id);
    assert_eq!(status, "succeeded");
    assert_eq!(outcomes, ["vanished", "succeeded"]);
    assert!(
        workers[0].starts_with("pf-first-") && workers[1].starts_with("pf-second-"),
        "{workers:?}"
    );
    rig.report("1 SIGKILL, 1 operation, 1 vanished attempt then succeeded, lost 0");
}

/// Scenario 2: `demo.crash` (crash_times 99) under a worker restarted whenever it dies: each attempt
/// aborts the process, the next worker's rescuer records it `vanished`; the first makes it a
/// suspect, run alone from then on, and after `--vanish-limit 3` isolated ones the operation is
/// dead (crash_loop), with exactly 4 attempts.
fn crash_loop(kind: RigKind) {
    const MAX_STARTS: usize = 8;
    let rig = Rig::new(kind, "crash_loop");
    let id = rig.enqueue("demo.crash", r#"{"crash_times": 99}"#);
    let mut aborts = 0;
    let mut clean_exit = false;
    for n in 0..MAX_STARTS {
        let mut w = rig.worker(
            &format!("pf-w{n}"),
            &["--lease", "1s", "--vanish-limit", "3", "--exit-when-idle"],
        );
        let Some(status) = w.wait_for_exit(Duration::from_secs(20)) else {
            panic!("worker {n} neither crashed nor went idle in 20 s");
        };
        if status.success() {
            clean_exit = true;
            break;
        }
        assert_eq!(
            status.signal(),
            Some(SIGABRT),
            "worker {n} died another way: {status}"
        );
        assert!(w.stderr().contains("demo.crash: aborting"));
        aborts += 1;
    }
    assert!(clean_exit, "still crashing after {MAX_STARTS} starts");
    let (status, reason, outcomes, _) = rig.history(&id);
    assert_eq!(
        (status.as_str(), reason.as_deref()),
        ("dead", Some("crash_loop"))
    );
    assert_eq!(outcomes, ["vanished"; 4]);
    assert_eq!(aborts, 4, "one process abort per attempt");
    // The re-drive's dry run warns that a replay takes workers down again.
    let dry = rig.oprec_json(&["redrive", "--json"]);
    let warnings = dry["warnings"].as_array().expect("warnings");
    let warning = warnings
        .iter()
        .find(|w| w["what"] == "crash_loop")
        .unwrap_or_else(|| panic!("no crash-loop warning: {dry}"));
    assert_eq!(warning["kind"], "demo.crash");
    assert!(
        warning["text"]
            .as_str()
            .is_some_and(|t| t.contains("takes workers down again")),
        "{warning}"
    );
    let text = rig.oprec_ok(&["redrive"]);
    assert!(text.contains("crash loop"), "{text}");
    rig.report(&format!(
        "{aborts} aborts, {} worker starts, 1 operation dead (crash_loop) after 1 + 3 isolated \
         vanished attempts",
        aborts + 1
    ));
}

/// Scenario 3, SIGTERM during work: 3 operations of 1.5 s and 2 of 20 s, all running; with
/// `--drain-timeout 3s` the worker finishes the short ones, releases the long ones and exits 0
/// by itself; nothing is left `running`. "Running" in the database means claimed: a claim the
/// worker has not yet handed to a handler is given back unstarted at the drain (the claim
/// buffer's rule), so the signal waits a moment after the last claim for the handlers to start.
fn sigterm_drains(kind: RigKind) {
    let rig = Rig::new(kind, "sigterm_drains");
    let enqueue = |payload: &str, n: &str| {
        rig.oprec_ok(&[
            "enqueue",
            "--kind",
            "demo.slow",
            "--payload",
            payload,
            "--count",
            n,
        ]);
    };
    enqueue(r#"{"ms": 1500}"#, "3");
    enqueue(r#"{"ms": 20000}"#, "2");
    let mut w = rig.worker("pf-drain", &["--drain-timeout", "3s", "--lease", "10s"]);
    let all_running = poll(Duration::from_secs(15), Duration::from_millis(20), || {
        (rig.running() == 5).then_some(())
    });
    assert!(all_running.is_some(), "not all running");
    // Claimed is not yet started: give the worker a moment to start the last claims' handlers
    // (well within the short operations' 1.5 s).
    std::thread::sleep(Duration::from_millis(500));
    let signalled = Instant::now();
    w.sigterm();
    let Some(status) = w.wait_for_exit(Duration::from_secs(15)) else {
        panic!("the worker did not exit after SIGTERM");
    };
    let drain = signalled.elapsed();
    assert!(status.success(), "{status}");
    assert!(w.stderr().contains("draining"), "{}", w.stderr());
    assert!(
        w.stdout().contains("succeeded 3") && w.stdout().contains("released 2"),
        "{}",
        w.stdout()
    );
    assert_eq!(rig.running(), 0);

    let ops = rig.oprec_json(&["ops", "list", "--json"]);
    let ops = ops.as_array().expect("array");
    assert_eq!(ops.len(), 5);
    for op in ops {
        let id = op["id"].as_str().expect("id");
        let (status, _, outcomes, _) = rig.history(id);
        if op["payload"]["ms"] == 1500 {
            assert_eq!(status, "succeeded", "{id}");
            assert_eq!(outcomes, ["succeeded"], "{id}");
        } else {
            assert_eq!(status, "pending", "{id}");
            assert_eq!(
                outcomes.last().map(String::as_str),
                Some("released"),
                "{id}: {outcomes:?}"
            );
        }
    }
    rig.report(&format!(
        "1 SIGTERM, 5 operations: 3 succeeded, 2 released to pending, 0 running, exit 0 {:.1} s after the signal",
        drain.as_secs_f64()
    ));
}

/// Scenario 4: `demo.effect` × 300 under two workers, one of them SIGKILLed while it holds
/// claims, restarted, killed again the same way and restarted again. The work comes in three
/// waves of 100 (eligible at once, after 3 s, after 6 s), so that the run lasts long enough for
/// both kills and every broker spreads each wave over both workers (the first AMQP consumer
/// would otherwise prefetch the whole backlog). Every operation succeeds, with exactly one effect
/// row each, and the history accounts for every vanished attempt.
fn kills_during_a_run(kind: RigKind) {
    const OPS: i64 = 300;
    let rig = Rig::new(kind, "kills_during_a_run");
    for delay in ["0s", "3s", "6s"] {
        rig.oprec_ok(&[
            "enqueue",
            "--kind",
            "demo.effect",
            "--payload",
            "{}",
            "--count",
            &(OPS / 3).to_string(),
            "--delay",
            delay,
        ]);
    }
    // No --exit-when-idle: between waves there is nothing eligible, and an idle worker would
    // leave. The workers run until every operation has ended, then drain on SIGTERM.
    let flags = ["--lease", "2s", "--concurrency", "2"];
    let mut steady = rig.worker("pf-steady", &flags);
    // Two workers starting at the same moment on PostgreSQL can fail: both run
    // `CREATE TABLE IF NOT EXISTS demo_effects` and one loses with a unique violation on
    // pg_type. Start the second once the first is up.
    steady.wait_until_up();
    let mut victim = rig.worker("pf-victim0", &flags);
    let mut held_at_kill = Vec::new();
    for n in 0..2 {
        // Kill the victim while it holds claims (operations it claimed are running).
        let holding = poll(Duration::from_secs(20), Duration::from_millis(2), || {
            let held = rig.scalar(&format!(
                "SELECT count(*) FROM operations \
                 WHERE status = 'running' AND worker_id LIKE 'pf-victim{n}-%'"
            ));
            (held > 0).then_some(held)
        });
        let Some(held) = holding else {
            panic!("victim {n} never held a claim (did the run end first?)");
        };
        assert_eq!(victim.sigkill().signal(), Some(SIGKILL));
        held_at_kill.push(held);
        victim = rig.worker(&format!("pf-victim{}", n + 1), &flags);
    }
    let ended = poll(Duration::from_secs(60), Duration::from_millis(100), || {
        let ended = rig.scalar(
            "SELECT count(*) FROM operations WHERE status IN ('succeeded', 'dead', 'cancelled')",
        );
        (ended == OPS).then_some(())
    });
    assert!(
        ended.is_some(),
        "not every operation ended: {:?}",
        rig.statuses()
    );
    for w in [&mut steady, &mut victim] {
        w.sigterm();
        let Some(status) = w.wait_for_exit(Duration::from_secs(15)) else {
            panic!("{} did not stop after SIGTERM", w.name);
        };
        assert!(status.success(), "{}: {status}", w.name);
    }

    // Nothing lost: every operation succeeded (the binary's view, then the table's).
    let ok = rig.oprec_json(&[
        "ops",
        "list",
        "--status",
        "succeeded",
        "--limit",
        "1000",
        "--json",
    ]);
    assert_eq!(ok.as_array().map(Vec::len), Some(OPS as usize));
    assert_eq!(rig.statuses(), [("succeeded".to_owned(), OPS)]);
    // One effect per operation, keyed by its effect key (the remote id).
    let effects = rig.scalar("SELECT count(*) FROM demo_effects");
    let matched = rig.scalar(
        "SELECT count(*) FROM operations o JOIN demo_effects e ON e.effect_key = o.remote_id",
    );
    assert_eq!((effects, matched), (OPS, OPS));
    // The history: one succeeded attempt per operation, every other attempt vanished, and every
    // vanished attempt belonged to a killed victim.
    let outcomes = rig.counts(
        "SELECT outcome, count(*) FROM operation_attempts GROUP BY outcome ORDER BY outcome",
    );
    let of = |o: &str| {
        outcomes
            .iter()
            .find(|(k, _)| k == o)
            .map(|(_, n)| *n)
            .unwrap_or(0)
    };
    let (succeeded, vanished) = (of("succeeded"), of("vanished"));
    assert_eq!(
        succeeded + vanished,
        outcomes.iter().map(|(_, n)| n).sum::<i64>(),
        "only succeeded and vanished attempts: {outcomes:?}"
    );
    assert_eq!(succeeded, OPS, "{outcomes:?}");
    let attempts = rig.scalar("SELECT CAST(sum(attempt) AS BIGINT) FROM operations");
    assert_eq!(
        attempts,
        succeeded + vanished,
        "sum of attempts = successes + vanished ({outcomes:?})"
    );
    assert!(
        vanished >= 1,
        "the kills landed while claims were held ({held_at_kill:?}), so some attempt vanished"
    );
    let strays = rig.scalar(
        "SELECT count(*) FROM operation_attempts WHERE outcome = 'vanished' \
         AND worker_id NOT LIKE 'pf-victim0-%' AND worker_id NOT LIKE 'pf-victim1-%'",
    );
    assert_eq!(strays, 0, "a vanished attempt from a worker nobody killed");
    // Handler executions: at least one per operation, at most one per attempt; an operation
    // executed twice had a vanished attempt (the effect landed, the kill came before the outcome).
    let calls = rig.scalar("SELECT CAST(sum(calls) AS BIGINT) FROM demo_effects");
    assert!(
        (OPS..=attempts).contains(&calls),
        "{calls} calls for {attempts} attempts"
    );
    let unexplained = rig.scalar(
        "SELECT count(*) FROM operations o JOIN demo_effects e ON e.effect_key = o.remote_id \
         WHERE e.calls > o.attempt",
    );
    assert_eq!(
        unexplained, 0,
        "an effect executed more often than attempted"
    );
    rig.report(&format!(
        "2 SIGKILLs (holding {held_at_kill:?} claims), {OPS} operations, {OPS} succeeded, lost 0, \
         {effects} effect rows (duplicates 0), {attempts} attempts = {succeeded} succeeded + \
         {vanished} vanished, {} re-executions after a vanished attempt",
        calls - OPS
    ));
}

/// Scenario 5, a worker SIGKILLed before the effect and after it: two `demo.effect` operations,
/// one pausing before its effect and one after it (before the remote id and the outcome are
/// written), both on their first attempt only. The worker is killed once both attempts sit in
/// their pauses (the second one's effect row visible); a second worker retries both. Nothing is
/// lost; each operation has exactly one effect row, the one made before the kill keeps its first
/// time; the handler ran twice for the second (at-least-once attempts), once for the first.
fn sigkill_around_the_effect(kind: RigKind) {
    let rig = Rig::new(kind, "sigkill_around_the_effect");
    let before = rig.enqueue(
        "demo.effect",
        r#"{"sleep_before_ms": 120000, "sleep_attempts": 1}"#,
    );
    let after = rig.enqueue(
        "demo.effect",
        r#"{"sleep_after_ms": 120000, "sleep_attempts": 1}"#,
    );
    let mut first = rig.worker("pf-first", &["--lease", "2s", "--concurrency", "2"]);
    first.wait_until_up();
    // Both claimed, the second's effect made: both attempts are in their pauses.
    let paused = poll(Duration::from_secs(30), Duration::from_millis(20), || {
        let effect = effect_of(&rig, &after);
        (rig.running() == 2 && effect.0 == 1).then_some(effect)
    });
    let Some((_, applied_at)) = paused else {
        panic!(
            "the attempts never reached their pauses: {:?}",
            rig.statuses()
        );
    };
    assert_eq!(effect_of(&rig, &before).0, 0, "paused before the effect");
    assert_eq!(first.sigkill().signal(), Some(SIGKILL));
    assert_eq!(rig.running(), 2, "no outcome was written: still running");

    let mut second = rig.worker("pf-second", &["--lease", "2s", "--exit-when-idle"]);
    let Some(status) = second.wait_for_exit(Duration::from_secs(60)) else {
        panic!("the second worker did not go idle");
    };
    assert!(status.success(), "{status}");
    let summary = second.stdout();
    assert!(
        summary.contains("succeeded 2") && summary.contains("vanished 2"),
        "{summary}"
    );

    for id in [&before, &after] {
        let (status, _, outcomes, workers) = rig.history(id);
        assert_eq!(status, "succeeded", "{id}");
        assert_eq!(outcomes, ["vanished", "succeeded"], "{id}");
        assert!(
            workers[0].starts_with("pf-first-") && workers[1].starts_with("pf-second-"),
            "{workers:?}"
        );
    }
    assert_eq!(rig.statuses(), [("succeeded".to_owned(), 2)]);
    // One effect per operation, under the effect key the operation records as its remote id.
    let effects = rig.scalar("SELECT count(*) FROM demo_effects");
    let matched = rig.scalar(
        "SELECT count(*) FROM operations o JOIN demo_effects e ON e.effect_key = o.remote_id",
    );
    assert_eq!((effects, matched), (2, 2), "one effect row per operation");
    // Killed before the effect: the retry made it, once.
    assert_eq!(effect_of(&rig, &before).0, 1);
    // Killed after the effect: the retry ran the handler again, and the effect key kept it one
    // effect, the one made before the kill.
    let (calls, at) = effect_of(&rig, &after);
    assert_eq!(calls, 2, "the retried handler ran again");
    assert_eq!(at, applied_at, "the effect is still the first one");
    rig.report(
        "1 SIGKILL (cutting 2 attempts: 1 before its effect, 1 after it), 2 operations, \
         2 succeeded, lost 0, 2 effect rows (duplicates 0), 2 vanished attempts, \
         1 re-execution absorbed by the effect key",
    );
}

/// Scenario 6, a zombie worker: it claims two operations (lease 2 s) and is SIGSTOPped a second
/// later, with both handlers started: a `demo.slow` of 4 s and a `demo.effect` pausing 120 s before its effect on the first attempt.
/// A second worker's rescuer records both attempts vanished, and it runs both to success. Then
/// the zombie gets SIGCONT: its slow handler has finished, so it sends a completion (or, when
/// the runtime fires the heartbeat's timer first, heartbeats), and its other attempt heartbeats.
/// Both are refused as stale claims, reported in its log (with the
/// operation's id) and in its summary, and the two operations, their histories and the effect
/// are exactly as they were before the zombie woke.
fn zombie_worker(kind: RigKind) {
    let rig = Rig::new(kind, "zombie_worker");
    let slow = rig.enqueue("demo.slow", r#"{"ms": 4000}"#);
    let effect = rig.enqueue(
        "demo.effect",
        r#"{"sleep_before_ms": 120000, "sleep_attempts": 1}"#,
    );
    let mut zombie = rig.worker("pf-zombie", &["--lease", "2s", "--concurrency", "2"]);
    let claimed = poll(Duration::from_secs(30), Duration::from_millis(20), || {
        let n = rig.scalar(
            "SELECT count(*) FROM operations WHERE status = 'running' AND worker_id LIKE 'pf-zombie-%'",
        );
        (n == 2).then_some(())
    });
    assert!(claimed.is_some(), "the zombie never claimed both");
    // Wait until both handlers run (a claim committed is not yet a handler running; on a loaded
    // machine the worker may take a while to start them): each attempt's heartbeat, which starts
    // with its handler, has extended the lease past the claim's. The first comes a third of the
    // lease (0.67 s) after the start, well within the slow handler's 4 s.
    let running = poll(Duration::from_secs(30), Duration::from_millis(20), || {
        let n = rig.scalar(
            "SELECT count(*) FROM operations WHERE status = 'running' \
             AND worker_id LIKE 'pf-zombie-%' AND lease_until > claimed_at + interval '2 seconds'",
        );
        (n == 2).then_some(())
    });
    assert!(running.is_some(), "the zombie's handlers never started");
    zombie.signal("STOP");
    let stopped = Instant::now();

    let mut other = rig.worker("pf-other", &["--lease", "2s", "--exit-when-idle"]);
    let Some(status) = other.wait_for_exit(Duration::from_secs(60)) else {
        panic!("the second worker did not go idle");
    };
    assert!(status.success(), "{status}");
    assert!(
        other.stdout().contains("succeeded 2") && other.stdout().contains("vanished 2"),
        "{}",
        other.stdout()
    );
    // The second worker took at least the lease (2 s) and the slow handler (4 s): the zombie's
    // slow handler is done by the time it wakes.
    assert!(
        stopped.elapsed() > Duration::from_secs(5),
        "the zombie slept past its lease and its slow handler"
    );
    let snapshot = |id: &str| rig.oprec_json(&["ops", "show", id, "--json"]);
    let before = (snapshot(&slow), snapshot(&effect), effect_of(&rig, &effect));
    for id in [&slow, &effect] {
        let (status, _, outcomes, workers) = rig.history(id);
        assert_eq!(status, "succeeded", "{id}");
        assert_eq!(outcomes, ["vanished", "succeeded"], "{id}");
        assert!(
            workers[0].starts_with("pf-zombie-") && workers[1].starts_with("pf-other-"),
            "{workers:?}"
        );
    }

    zombie.signal("CONT");
    // The stale heartbeat of the paused one, and for the slow one its stale completion, each
    // logged with its operation's id. At SIGCONT the slow handler's timer and its heartbeat's
    // timer have both expired, and the runtime may fire either first: usually the handler
    // finishes and its completion is refused; sometimes the heartbeat is refused first and the
    // attempt is abandoned unfinished. Either way it is one stale claim, reported, that changes
    // nothing (checked below).
    let reported = poll(Duration::from_secs(30), Duration::from_millis(50), || {
        let log = zombie.stderr();
        let stale: Vec<&str> = log.lines().filter(|l| l.contains("stale claim")).collect();
        let slow_refused = if stale
            .iter()
            .any(|l| l.contains(&slow) && l.contains("this outcome changed nothing"))
        {
            Some("completion")
        } else if stale
            .iter()
            .any(|l| l.contains(&slow) && l.contains("abandoning the attempt"))
        {
            Some("heartbeat")
        } else {
            None
        };
        let heartbeat = stale
            .iter()
            .any(|l| l.contains(&effect) && l.contains("abandoning the attempt"));
        slow_refused.filter(|_| heartbeat)
    });
    let Some(slow_refused) = reported else {
        panic!("stale claims not reported: {}", zombie.stderr());
    };
    eprintln!("the slow operation's stale claim was refused at its {slow_refused}");
    zombie.sigterm();
    let Some(status) = zombie.wait_for_exit(Duration::from_secs(30)) else {
        panic!("the zombie did not stop after SIGTERM");
    };
    assert!(status.success(), "{status}");
    assert!(
        zombie.stdout().contains("stale claims 2"),
        "{}",
        zombie.stdout()
    );
    // Changed nothing: the rows, their histories and the effect are as they were, but for the
    // note of the refused completion on the attempt it belonged to (the vanished one).
    let mut after = (snapshot(&slow), snapshot(&effect), effect_of(&rig, &effect));
    let late = after.0["attempts"][0]["stale_outcome"].take();
    after.0["attempts"][0]["stale_at"] = serde_json::Value::Null;
    if slow_refused == "completion" {
        assert_eq!(
            late, "succeeded",
            "the refused completion is in the history"
        );
    } else {
        assert_eq!(late, serde_json::Value::Null);
    }
    assert_eq!(before, after, "the zombie changed something");
    assert_eq!(after.2.0, 1, "the zombie never reached the effect");
    assert_eq!(rig.running(), 0);
    rig.report(&format!(
        "1 SIGSTOP past the lease then SIGCONT, 2 operations, 2 succeeded, lost 0, \
         duplicate effects 0, 2 vanished attempts, 2 stale claims reported (the slow one's \
         {slow_refused}, the paused one's heartbeat), nothing changed"
    ));
}

/// Scenario 7, suspect isolation: 20 `demo.effect`, one `demo.crash {"crash_times": 100}` and
/// 20 more `demo.effect`, under one worker (32 handlers, claiming ahead) restarted whenever it
/// dies. The culprit's first attempt aborts the process with its neighbours in flight: every
/// operation the worker held vanishes and becomes a suspect, each retried alone. The innocent
/// ones succeed on their isolated attempt; the culprit's isolated attempts abort the worker
/// again, and after `--vanish-limit 3` of them it alone is dead (`crash_loop`), its error saying
/// that its own attempts killed the worker. Every worker's summary agrees with the history it
/// wrote.
fn suspects_isolate_the_culprit(kind: RigKind) {
    const MAX_STARTS: usize = 10;
    let rig = Rig::new(kind, "suspects_isolate_the_culprit");
    let effects = |n: &str| {
        rig.oprec_ok(&[
            "enqueue",
            "--kind",
            "demo.effect",
            "--payload",
            "{}",
            "--count",
            n,
        ]);
    };
    effects("20");
    let culprit = rig.enqueue("demo.crash", r#"{"crash_times": 100}"#);
    effects("20");
    let flags = ["--lease", "1s", "--vanish-limit", "3", "--exit-when-idle"];
    let mut aborts = 0;
    let mut clean_exit = false;
    let mut summaries = Vec::new();
    for n in 0..MAX_STARTS {
        let mut w = rig.worker(&format!("pf-iso{n}"), &flags);
        let Some(status) = w.wait_for_exit(Duration::from_secs(60)) else {
            panic!("worker {n} neither crashed nor went idle in 60 s");
        };
        if status.success() {
            clean_exit = true;
            summaries.push((format!("pf-iso{n}-"), w.stdout()));
            break;
        }
        assert_eq!(status.signal(), Some(SIGABRT), "worker {n}: {status}");
        assert!(
            w.stderr().contains(&culprit),
            "worker {n} died of another operation"
        );
        aborts += 1;
    }
    assert!(clean_exit, "still crashing after {MAX_STARTS} starts");

    // Only the culprit is dead, of a crash loop; every innocent operation succeeded.
    let (status, reason, outcomes, _) = rig.history(&culprit);
    assert_eq!(
        (status.as_str(), reason.as_deref()),
        ("dead", Some("crash_loop"))
    );
    assert_eq!(
        outcomes, ["vanished"; 4],
        "one attempt beside others, 3 isolated"
    );
    assert_eq!(aborts, 4, "one process abort per attempt of the culprit");
    let innocents_ok = rig.scalar(
        "SELECT count(*) FROM operations WHERE kind = 'demo.effect' AND status = 'succeeded'",
    );
    assert_eq!(innocents_ok, 40, "{:?}", rig.statuses());
    assert_eq!(
        rig.statuses(),
        [("dead".to_owned(), 1), ("succeeded".to_owned(), 40)]
    );
    // The culprit's history: the first attempt ran beside others, the next three alone.
    let isolated = rig.counts(&format!(
        "SELECT CASE WHEN isolated THEN 'isolated' ELSE 'beside others' END, count(*) \
         FROM operation_attempts WHERE operation_id = '{culprit}' GROUP BY 1 ORDER BY 1"
    ));
    assert_eq!(
        isolated,
        [("beside others".to_owned(), 1), ("isolated".to_owned(), 3)]
    );
    // An innocent attempt vanished only beside the culprit, and every innocent that lost one
    // succeeded on an isolated attempt: no innocent ever vanished alone.
    let victims = rig.scalar(
        "SELECT count(DISTINCT operation_id) FROM operation_attempts a \
         JOIN operations o ON o.id = a.operation_id \
         WHERE o.kind = 'demo.effect' AND a.outcome = 'vanished'",
    );
    assert!(victims >= 1, "the first abort took neighbours down with it");
    let innocent_isolated_vanish = rig.scalar(
        "SELECT count(*) FROM operation_attempts a JOIN operations o ON o.id = a.operation_id \
         WHERE o.kind = 'demo.effect' AND a.outcome = 'vanished' AND a.isolated",
    );
    assert_eq!(innocent_isolated_vanish, 0);
    let rescued_alone = rig.scalar(
        "SELECT count(*) FROM operation_attempts a JOIN operations o ON o.id = a.operation_id \
         WHERE o.kind = 'demo.effect' AND a.outcome = 'succeeded' AND a.isolated",
    );
    assert_eq!(rescued_alone, victims, "each victim succeeded alone");
    // `ops show` blames the culprit's own attempts and marks the isolated ones.
    let shown = rig.oprec_ok(&["ops", "show", &culprit]);
    assert!(shown.contains("own attempt"), "{shown}");
    assert!(shown.contains("crash loop"), "{shown}");
    assert_eq!(shown.matches("vanished (isolated)").count(), 3, "{shown}");
    // The summary of the worker that finished agrees with the history it wrote.
    for (worker, summary) in &summaries {
        let wrote = |outcome: &str| {
            rig.scalar(&format!(
                "SELECT count(*) FROM operation_attempts \
                 WHERE worker_id LIKE '{worker}%' AND outcome = '{outcome}'"
            ))
        };
        let ran_alone = rig.scalar(&format!(
            "SELECT count(*) FROM operation_attempts WHERE worker_id LIKE '{worker}%' AND isolated"
        ));
        assert!(
            summary.contains(&format!("succeeded {},", wrote("succeeded")))
                && summary.contains(&format!("failed {},", wrote("error")))
                && summary.contains(&format!("isolated {ran_alone},")),
            "{worker}: {summary}"
        );
    }
    rig.report(&format!(
        "{aborts} aborts by 1 culprit among 40 innocents: culprit dead (crash_loop) after 1 + 3 \
         isolated vanished attempts, 40 of 40 innocents succeeded ({victims} of them after \
         vanishing beside the culprit, each then alone)"
    ));
}

/// Runs each scenario on every rig, as `scenario::rig`.
macro_rules! on_every_rig {
    ($($scenario:ident),* $(,)?) => {$(
        mod $scenario {
            #[test]
            fn postgres_redis() {
                super::$scenario(super::RigKind::PostgresRedis);
            }
            #[test]
            fn postgres_amqp() {
                super::$scenario(super::RigKind::PostgresAmqp);
            }
            #[test]
            fn sqlite_poll() {
                super::$scenario(super::RigKind::SqlitePoll);
            }
        }
    )*};
}

on_every_rig!(
    sigkill_mid_handler,
    crash_loop,
    sigterm_drains,
    kills_during_a_run,
    sigkill_around_the_effect,
    suspects_isolate_the_culprit
);

/// The zombie runs on the PostgreSQL rigs only. On SQLite the write lock is a file lock: a process
/// stopped inside a write (its heartbeat, its rescuer pass) blocks every other writer for as long
/// as it is stopped, and no server can end its session, so the test would hang now and then.
mod zombie_worker {
    #[test]
    fn postgres_redis() {
        super::zombie_worker(super::RigKind::PostgresRedis);
    }
    #[test]
    fn postgres_amqp() {
        super::zombie_worker(super::RigKind::PostgresAmqp);
    }
}
