//! The operator's commands against a real PostgreSQL, at the sizes an operator meets: a re-drive
//! of 5,000 dead operations after a dry run, at 500/s; a re-drive by class; a pause by class that
//! leaves other work running; reconciliation by the worker's reconciler and by hand; and
//! `oprec stats --json` checked against counts of our own SQL. Each test has its own schema.

mod background;
mod common;
mod pg;

use std::time::{Duration, Instant};

use background::Background;
use common::Oprec;
use pg::Pg;
use serde_json::Value;

/// A worker run to idle, poll-only, with extra flags.
fn work(o: &Oprec, extra: &[&str]) -> String {
    let args = [
        &[
            "--transport",
            "poll",
            "worker",
            "--demo",
            "--exit-when-idle",
        ][..],
        extra,
    ]
    .concat();
    o.run(&args).ok().to_owned()
}

/// `n` operations of `kind` with `payload`.
fn enqueue_many(o: &Oprec, kind: &str, payload: &str, n: u32) {
    o.run(&[
        "enqueue",
        "--kind",
        kind,
        "--payload",
        payload,
        "--count",
        &n.to_string(),
    ])
    .ok();
}

/// Two `redrive --as-new --yes` at once over the same dead operations: each dead operation gets
/// exactly one copy (the database refuses a second), and the two runs' counts add up to it.
#[test]
fn two_redrives_as_new_at_once_copy_each_dead_operation_once() {
    let (db, o) = Pg::fresh();
    enqueue_many(
        &o,
        "demo.flaky",
        r#"{"fail_times": 99, "class": "transient"}"#,
        2_000,
    );
    work(&o, &["--demo-max-attempts", "1", "--concurrency", "64"]);
    assert_eq!(
        db.int("SELECT count(*) FROM operations WHERE status = 'dead'"),
        2_000
    );
    let args = [
        "redrive", "--as-new", "--yes", "--all", "--batch", "50", "--json",
    ];
    let runs: Vec<Value> = std::thread::scope(|s| {
        let a = s.spawn(|| o.run(&args).json());
        let b = s.spawn(|| o.run(&args).json());
        vec![a.join().unwrap(), b.join().unwrap()]
    });
    let made: u64 = runs.iter().map(|r| r["redriven"].as_u64().unwrap()).sum();
    assert_eq!(made, 2_000, "{runs:?}");
    assert_eq!(
        db.int("SELECT count(*) FROM operations WHERE redrive_of IS NOT NULL"),
        2_000
    );
    assert_eq!(
        db.int(
            "SELECT count(*) FROM (SELECT redrive_of FROM operations \
             WHERE redrive_of IS NOT NULL GROUP BY 1 HAVING count(*) > 1) twice"
        ),
        0,
        "no parent copied twice"
    );
    // Every original is marked with its one copy, and none is left counted as awaiting action.
    assert_eq!(
        db.int(
            "SELECT count(*) FROM operations p JOIN operations c ON c.id = p.redriven_as \
             WHERE c.redrive_of = p.id AND p.status = 'dead'"
        ),
        2_000
    );
    let stats = o.run(&["stats", "--json"]).json();
    assert!(stats["by_status"]["dead"].is_null(), "{stats}");
    assert_eq!(
        stats["dead_redriven_by_kind"]["demo.flaky"], 2_000,
        "{stats}"
    );
}

#[test]
fn five_thousand_dead_redriven_at_500_per_second_after_a_dry_run() {
    let (db, o) = Pg::fresh();
    // The provider is down for the next 30 s: every attempt before then fails transient; with
    // one attempt allowed, each operation dies at its first.
    let outage_ends = chrono::Utc::now() + chrono::Duration::seconds(30);
    let payload = format!(
        r#"{{"fail_until": "{}", "class": "transient"}}"#,
        outage_ends.to_rfc3339()
    );
    enqueue_many(&o, "demo.flaky", &payload, 5_000);
    work(&o, &["--demo-max-attempts", "1", "--concurrency", "64"]);
    assert!(
        chrono::Utc::now() < outage_ends,
        "the worker took longer than the 30 s outage; this machine is too slow for the test"
    );
    assert_eq!(
        db.int(
            "SELECT count(*) FROM operations WHERE status = 'dead' AND kind = 'demo.flaky' \
             AND last_failure_class = 'transient' AND terminal_reason = 'attempts_exhausted'"
        ),
        5_000
    );

    // The dry run reports them, grouped, and changes nothing.
    let dry = o.run(&["redrive", "--dry-run", "--json"]).json();
    assert_eq!(dry["matched"], 5_000);
    assert_eq!(dry["would_redrive"], 5_000);
    assert_eq!(dry["not_terminal"], 0);
    assert_eq!(dry["changed"], false);
    assert_eq!(dry["groups"].as_array().unwrap().len(), 1);
    assert_eq!(dry["groups"][0]["kind"], "demo.flaky");
    assert_eq!(dry["groups"][0]["class"], "transient");
    assert_eq!(dry["groups"][0]["reason"], "attempts_exhausted");
    assert_eq!(dry["groups"][0]["count"], 5_000);
    assert_eq!(dry["payloads"]["demo.flaky"], "snapshot");
    assert!(
        dry["samples"][0]["last_error"]["summary"]
            .as_str()
            .unwrap()
            .contains("simulated transient failure"),
        "{dry}"
    );
    let text = o.run(&["redrive", "--rate", "500/s"]).ok().to_owned();
    for needle in [
        "5,000 dead operations match",
        "demo.flaky  transient  attempts_exhausted  5,000",
        "snapshot: the re-drive replays the payload",
        "one every 2ms",
        "nothing was changed: add --yes",
    ] {
        assert!(text.contains(needle), "{needle}: {text}");
    }
    assert_eq!(
        db.int("SELECT count(*) FROM operations WHERE status = 'dead'"),
        5_000,
        "a dry run changes nothing"
    );
    assert_eq!(db.int("SELECT count(*) FROM audit_log"), 0);

    // The outage is over.
    let wait = (outage_ends - chrono::Utc::now())
        .to_std()
        .unwrap_or_default();
    std::thread::sleep(wait + Duration::from_millis(200));

    let began = db
        .float("SELECT extract(epoch FROM now())::float8")
        .unwrap();
    let done = o
        .run(&[
            "redrive",
            "--yes",
            "--all",
            "--rate",
            "500/s",
            "--actor",
            "ops-oncall",
            "--note",
            "provider outage over",
            "--json",
        ])
        .json();
    assert_eq!(done["redriven"], 5_000);
    assert_eq!(done["mode"], "in_place");
    assert_eq!(
        db.int("SELECT count(*) FROM operations WHERE status = 'pending' AND redrive_count = 1 AND attempt = 0"),
        5_000
    );
    // 5,000 at 500/s: one every 2 ms, so 4,999 gaps of 2 ms between the first and the last, and
    // the 10 s window they occupy holds exactly 500 in each second.
    let first = db
        .float("SELECT extract(epoch FROM min(next_eligible_at))::float8 FROM operations")
        .unwrap();
    let span = db
        .float(
            "SELECT extract(epoch FROM max(next_eligible_at) - min(next_eligible_at))::float8 \
             FROM operations",
        )
        .unwrap();
    assert!((span - 9.998).abs() < 1e-6, "first to last: {span} s");
    assert!(
        first >= began - 1.0,
        "the first starts now, not in the past"
    );
    let per_second = db.counts(
        "SELECT floor(extract(epoch FROM next_eligible_at - (SELECT min(next_eligible_at) \
         FROM operations)))::text, count(*) FROM operations GROUP BY 1",
    );
    assert_eq!(per_second.len(), 10, "{per_second:?}");
    assert!(per_second.values().all(|n| *n == 500), "{per_second:?}");
    assert_eq!(
        db.int(
            "SELECT count(*) FROM (SELECT next_eligible_at FROM operations \
             GROUP BY 1 HAVING count(*) > 1) AS same"
        ),
        0,
        "no two share a time"
    );
    eprintln!("re-drive spread: first to last {span:.3} s, 500 per second over 10 s");

    // One audit entry, with the filter, the count, the mode and the rate.
    assert_eq!(db.int("SELECT count(*) FROM audit_log"), 1);
    let audit = o.run(&["audit", "--json"]).json();
    let entry = &audit[0];
    assert_eq!(entry["action"], "redrive");
    assert_eq!(entry["affected"], 5_000);
    assert_eq!(entry["actor"], "ops-oncall");
    assert_eq!(entry["reason"], "provider outage over");
    assert_eq!(entry["details"]["mode"]["mode"], "in_place");
    assert_eq!(entry["details"]["pace"]["rate"], "500/s");
    assert_eq!(entry["details"]["pace"]["spacing_ms"], 2.0);
    assert_eq!(entry["details"]["complete"], true);

    // All succeed, let through at the stated pace.
    let began = Instant::now();
    while db.int("SELECT count(*) FROM operations WHERE status = 'succeeded'") < 5_000 {
        assert!(
            began.elapsed() < Duration::from_secs(120),
            "not all succeeded: {:?}",
            db.counts("SELECT status, count(*) FROM operations GROUP BY 1")
        );
        work(&o, &["--concurrency", "64"]);
    }
    assert_eq!(
        db.int(
            "SELECT count(*) FROM operation_attempts WHERE outcome = 'succeeded' \
             AND claimed_at >= (SELECT min(next_eligible_at) FROM operations)"
        ),
        5_000,
        "one successful attempt each, none before its time"
    );
    // Measured from the first eligible time, not the first claim: a worker that starts a second
    // late takes what became eligible meanwhile at once, but never anything before its time.
    let claimed_over = db
        .float(
            "SELECT extract(epoch FROM max(claimed_at) - \
             (SELECT min(next_eligible_at) FROM operations))::float8 \
             FROM operation_attempts WHERE outcome = 'succeeded'",
        )
        .unwrap();
    assert!(
        claimed_over >= 9.0,
        "the recovered provider saw the pile over {claimed_over} s"
    );
    eprintln!("successful attempts were claimed over {claimed_over:.3} s from the first eligible");
    // Nothing is left to re-drive, and a second run re-drives nothing.
    assert_eq!(
        o.run(&["redrive", "--yes", "--all", "--json"]).json()["redriven"],
        0
    );
}

#[test]
fn a_redrive_by_class_leaves_the_other_classes_untouched() {
    let (db, o) = Pg::fresh();
    enqueue_many(
        &o,
        "demo.flaky",
        r#"{"fail_times": 9, "class": "transient"}"#,
        4,
    );
    enqueue_many(
        &o,
        "demo.flaky",
        r#"{"fail_times": 9, "class": "permanent"}"#,
        3,
    );
    enqueue_many(
        &o,
        "demo.flaky",
        r#"{"fail_times": 9, "class": "rate_limited"}"#,
        2,
    );
    work(&o, &["--demo-max-attempts", "1"]);
    assert_eq!(
        db.counts(
            "SELECT last_failure_class, count(*) FROM operations WHERE status = 'dead' GROUP BY 1"
        ),
        [
            ("permanent".to_owned(), 3),
            ("rate_limited".to_owned(), 2),
            ("transient".to_owned(), 4)
        ]
        .into()
    );
    let before = db.text(
        "SELECT string_agg(id::text || updated_at::text || terminal_at::text, ',' ORDER BY id) \
         FROM operations WHERE last_failure_class <> 'transient'",
    );

    let dry = o
        .run(&["redrive", "--class", "transient", "--dry-run", "--json"])
        .json();
    assert_eq!(dry["matched"], 4);
    let done = o
        .run(&["redrive", "--class", "transient", "--yes", "--json"])
        .json();
    assert_eq!(done["redriven"], 4);
    assert_eq!(
        db.counts(
            "SELECT last_failure_class || ' ' || status, count(*) FROM operations GROUP BY 1"
        ),
        [
            ("permanent dead".to_owned(), 3),
            ("rate_limited dead".to_owned(), 2),
            ("transient pending".to_owned(), 4)
        ]
        .into()
    );
    let after = db.text(
        "SELECT string_agg(id::text || updated_at::text || terminal_at::text, ',' ORDER BY id) \
         FROM operations WHERE last_failure_class <> 'transient'",
    );
    assert_eq!(before, after, "the other classes were not written at all");
    assert_eq!(
        db.int("SELECT count(*) FROM operations WHERE redrive_count > 0 AND last_failure_class <> 'transient'"),
        0
    );
    // By terminal reason, too: only the permanent ones.
    let permanent = o
        .run(&[
            "redrive",
            "--reason",
            "permanent",
            "--as-new",
            "--yes",
            "--json",
        ])
        .json();
    assert_eq!(permanent["redriven"], 3);
    assert_eq!(
        db.int("SELECT count(*) FROM operations n JOIN operations o ON n.redrive_of = o.id WHERE o.last_failure_class = 'permanent' AND o.status = 'dead' AND n.status = 'pending'"),
        3,
        "as new: linked copies; the originals stay dead"
    );
}

#[test]
fn pausing_a_class_stops_only_that_class_and_resume_restarts_it() {
    let (db, o) = Pg::fresh();
    o.run(&[
        "pause",
        "--class",
        "transient",
        "--reason",
        "provider outage",
        "--actor",
        "alice",
    ])
    .ok();
    let controls = o.run(&["controls", "--json"]).json();
    assert_eq!(controls[0]["scope"], "failure_class");
    assert_eq!(controls[0]["value"], "transient");
    assert_eq!(controls[0]["action"], "pause");
    assert_eq!(controls[0]["actor"], "alice");

    let worker = Background::start(
        &o,
        &[
            "--transport",
            "poll",
            "worker",
            "--demo",
            "--demo-ladder",
            "0,1",
        ],
    );
    enqueue_many(
        &o,
        "demo.flaky",
        r#"{"fail_times": 1, "class": "transient"}"#,
        10,
    );
    // Each fails once (transient) and so falls under the pause.
    db.wait_for(
        "SELECT count(*) FROM operations WHERE kind = 'demo.flaky' AND status = 'pending' \
         AND attempt = 1 AND last_failure_class = 'transient'",
        10,
        Duration::from_secs(30),
    );
    // Other work goes on meanwhile.
    enqueue_many(&o, "demo.noop", "{}", 20);
    db.wait_for(
        "SELECT count(*) FROM operations WHERE kind = 'demo.noop' AND status = 'succeeded'",
        20,
        Duration::from_secs(30),
    );
    // Well past their 1 s rung, the paused ones have not been tried again.
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(
        db.int(
            "SELECT count(*) FROM operations WHERE kind = 'demo.flaky' AND status = 'pending' \
             AND attempt = 1 AND next_eligible_at < now()"
        ),
        10,
        "eligible, but paused"
    );
    assert_eq!(
        db.int("SELECT count(*) FROM operation_attempts a JOIN operations o ON o.id = a.operation_id WHERE o.kind = 'demo.flaky'"),
        10
    );

    let resumed = o.run(&["resume", "--class", "transient", "--json"]).json();
    assert_eq!(resumed["control_removed"], true);
    db.wait_for(
        "SELECT count(*) FROM operations WHERE kind = 'demo.flaky' AND status = 'succeeded' \
         AND attempt = 2",
        10,
        Duration::from_secs(30),
    );
    worker.stop();
    assert_eq!(o.run(&["controls", "--json"]).json(), Value::Array(vec![]));
    assert_eq!(
        db.counts("SELECT action, count(*) FROM audit_log GROUP BY 1"),
        [("pause".to_owned(), 1), ("resume".to_owned(), 1)].into()
    );
}

#[test]
fn the_reconciler_resolves_unknown_outcomes_applied_or_retried() {
    let (db, o) = Pg::fresh();
    let applied = o.enqueue(
        "demo.flaky",
        r#"{"fail_times": 1, "class": "unknown", "reconcile": "applied"}"#,
    );
    let not_applied = o.enqueue(
        "demo.flaky",
        r#"{"fail_times": 1, "class": "unknown", "reconcile": "not_applied"}"#,
    );
    let began = Instant::now();
    loop {
        work(&o, &["--reconcile-interval", "200ms"]);
        let done = db.int("SELECT count(*) FROM operations WHERE status = 'succeeded'");
        if done == 2 {
            break;
        }
        assert!(
            began.elapsed() < Duration::from_secs(60),
            "{:?}",
            db.counts("SELECT status, count(*) FROM operations GROUP BY 1")
        );
    }

    let a = o.show(&applied);
    assert_eq!(a["operation"]["status"], "succeeded");
    assert!(
        !a["operation"]["remote_id"].as_str().unwrap().is_empty(),
        "succeeded with the remote id the hook found: {a}"
    );
    let outcomes = |d: &Value| -> Vec<String> {
        d["attempts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a["outcome"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(outcomes(&a), ["unknown"], "no blind retry: one attempt");
    assert!(
        a["operation"]["last_error"]["decision"]
            .as_str()
            .unwrap()
            .contains("applied"),
        "{a}"
    );
    let n = o.show(&not_applied);
    assert_eq!(n["operation"]["status"], "succeeded");
    assert_eq!(
        outcomes(&n),
        ["unknown", "succeeded"],
        "not applied: safe to retry, and retried"
    );
}

#[test]
fn a_person_resolves_what_no_hook_can_tell() {
    let (db, o) = Pg::fresh();
    let charged = o.enqueue("demo.flaky", r#"{"fail_times": 1, "class": "unknown"}"#);
    let never = o.enqueue("demo.flaky", r#"{"fail_times": 1, "class": "unknown"}"#);
    work(&o, &["--reconcile-interval", "200ms"]);
    // The hook says "still unknown": they wait for a decision.
    assert_eq!(
        db.int("SELECT count(*) FROM operations WHERE status = 'reconciling'"),
        2
    );
    let listed = o.run(&["reconcile", "list", "--json"]).json();
    assert_eq!(listed.as_array().unwrap().len(), 2);
    assert_eq!(listed[0]["kind"], "demo.flaky");
    assert!(listed[0]["since"].is_string(), "{listed}");
    assert!(
        listed[0]["last_error"]["summary"]
            .as_str()
            .unwrap()
            .contains("unknown"),
        "{listed}"
    );
    let text = o.run(&["reconcile", "list"]).ok().to_owned();
    assert!(text.contains(&charged) && text.contains("SINCE"), "{text}");

    let r = o
        .run(&[
            "reconcile",
            "resolve",
            &charged,
            "--applied",
            "--remote-id",
            "ch_123",
            "--reason",
            "found the charge in the provider's dashboard",
            "--json",
        ])
        .json();
    assert_eq!(r["status"], "succeeded");
    assert_eq!(o.show(&charged)["operation"]["remote_id"], "ch_123");
    o.run(&["reconcile", "resolve", &never, "--not-applied"])
        .ok();
    assert_eq!(o.show(&never)["operation"]["status"], "pending");
    work(&o, &[]);
    assert_eq!(o.show(&never)["operation"]["status"], "succeeded");
    o.run(&["reconcile", "resolve", &charged, "--applied"])
        .bad_input("not reconciling");
    assert_eq!(
        db.int("SELECT count(*) FROM audit_log WHERE action = 'reconcile_resolve'"),
        2
    );
}

#[test]
fn stats_json_equals_counts_of_our_own_sql() {
    let (db, o) = Pg::fresh();
    enqueue_many(&o, "demo.noop", "{}", 3);
    enqueue_many(&o, "demo.flaky", r#"{"fail_times": 1}"#, 2);
    enqueue_many(
        &o,
        "demo.flaky",
        r#"{"fail_times": 9, "class": "permanent"}"#,
        2,
    );
    enqueue_many(
        &o,
        "demo.flaky",
        r#"{"fail_times": 9, "class": "transient"}"#,
        1,
    );
    enqueue_many(
        &o,
        "demo.flaky",
        r#"{"fail_times": 9, "class": "unknown"}"#,
        1,
    );
    enqueue_many(
        &o,
        "demo.flaky",
        r#"{"fail_times": 9, "class": "configuration"}"#,
        1,
    );
    enqueue_many(
        &o,
        "demo.flaky",
        r#"{"fail_times": 9, "class": "rate_limited", "retry_after_s": 3600}"#,
        2,
    );
    work(&o, &["--demo-ladder", "0,1", "--code-version", "v2-broken"]);
    o.run(&[
        "enqueue",
        "--kind",
        "demo.noop",
        "--payload",
        "{}",
        "--delay",
        "1h",
    ])
    .ok();
    let gone = o.enqueue("demo.noop", "{}");
    o.run(&["cancel", &gone]).ok();
    // Eligible, with no worker to take it: the oldest eligible.
    let waiting = o.enqueue("demo.slow", r#"{"ms": 1}"#);

    let s = o.run(&["stats", "--json"]).json();
    let map = |v: &Value| -> std::collections::BTreeMap<String, u64> {
        v.as_object()
            .unwrap()
            .iter()
            .map(|(k, n)| (k.clone(), n.as_u64().unwrap()))
            .collect()
    };
    assert_eq!(
        map(&s["by_status"]),
        db.counts("SELECT status, count(*) FROM operations GROUP BY 1")
    );
    assert_eq!(
        map(&s["pending_by_class"]),
        db.counts(
            "SELECT coalesce(last_failure_class, 'none'), count(*) FROM operations \
             WHERE status = 'pending' GROUP BY 1"
        )
    );
    assert_eq!(
        map(&s["dead_by_kind"]),
        db.counts("SELECT kind, count(*) FROM operations WHERE status = 'dead' GROUP BY 1")
    );
    assert_eq!(
        map(&s["dead_last_hour_by_kind"]),
        db.counts(
            "SELECT kind, count(*) FROM operations WHERE status = 'dead' \
             AND terminal_at > now() - interval '1 hour' GROUP BY 1"
        )
    );
    assert_eq!(
        map(&s["dead_last_day_by_kind"]),
        db.counts(
            "SELECT kind, count(*) FROM operations WHERE status = 'dead' \
             AND terminal_at > now() - interval '1 day' GROUP BY 1"
        )
    );
    assert_eq!(
        map(&s["dead_last_day_by_code_version"]),
        db.counts(
            "SELECT a.code_version, count(*) FROM operations o JOIN operation_attempts a \
             ON a.operation_id = o.id AND a.attempt = o.attempt \
             WHERE o.status = 'dead' AND o.terminal_at > now() - interval '1 day' GROUP BY 1"
        )
    );
    assert_eq!(map(&s["dead_last_day_by_code_version"])["v2-broken"], 3);
    assert_eq!(
        s["reconciling"].as_i64().unwrap(),
        db.int("SELECT count(*) FROM operations WHERE status = 'reconciling'")
    );
    assert_eq!(s["reconciling"], 1);
    let per_success = db
        .float(
            "SELECT (SELECT count(*) FROM operation_attempts a JOIN operations o \
                     ON o.id = a.operation_id WHERE o.status = 'succeeded')::float8 \
                  / (SELECT count(*) FROM operations WHERE status = 'succeeded')",
        )
        .unwrap();
    assert!((s["attempts_per_success"].as_f64().unwrap() - per_success).abs() < 1e-9);
    assert!(
        (per_success - 7.0 / 5.0).abs() < 1e-9,
        "3 noops + 2 flaky in 2 attempts"
    );
    assert_eq!(
        map(&s["attempts_last_hour_by_dependency"]),
        db.counts(
            "SELECT coalesce(o.dependency, 'none'), count(*) FROM operation_attempts a \
             JOIN operations o ON o.id = a.operation_id \
             WHERE a.ended_at > now() - interval '1 hour' GROUP BY 1"
        )
    );
    assert_eq!(s["oldest_eligible"]["id"], waiting.as_str());
    assert_eq!(
        s["oldest_eligible"]["id"].as_str().map(str::to_owned),
        db.text(
            "SELECT id::text FROM operations WHERE status = 'pending' AND next_eligible_at <= now() \
             ORDER BY next_eligible_at, id LIMIT 1"
        )
    );
    assert_eq!(
        map(&s["backlog_by_age"]),
        db.counts(
            "SELECT '<1h', count(*) FROM operations \
             WHERE status IN ('pending', 'running', 'reconciling', 'held')"
        )
    );
    let age = db
        .float(
            "SELECT extract(epoch FROM now() - min(created_at))::float8 FROM operations \
             WHERE status IN ('pending', 'running', 'reconciling', 'held')",
        )
        .unwrap();
    assert!(
        (s["backlog_age_seconds"].as_f64().unwrap() - age).abs() <= 2.0,
        "{s} vs {age}"
    );

    // The same figures, readable.
    let text = o.run(&["stats"]).ok().to_owned();
    for needle in [
        "operations by status",
        "pending by failure class",
        "rate_limited",
        "attempts per success: 1.40",
        &format!("oldest eligible: {waiting} demo.slow, overdue by"),
        "dead per kind",
        "demo.flaky  3",
        "v2-broken",
        "reconciling (unknown outcomes awaiting a hook or `oprec reconcile resolve`): 1",
        "demo-provider",
        "backlog (unfinished operations by creation time): the oldest was created",
        "<1h",
    ] {
        assert!(text.contains(needle), "{needle}: {text}");
    }
}
