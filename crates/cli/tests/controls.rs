//! `oprec pause`, `resume`, `postpone` and `controls` on SQLite: what is in force, what lapses,
//! and `resume --dependency` releasing the operations held for that dependency's configuration
//! failure; every action in the audit log with its operator.

mod common;

use common::Oprec;
use serde_json::Value;

fn work(o: &Oprec) {
    o.run(&[
        "--transport",
        "poll",
        "worker",
        "--demo",
        "--demo-ladder",
        "0,1",
        "--exit-when-idle",
    ])
    .ok();
}

#[test]
fn controls_list_what_is_in_force_and_resume_lifts_them() {
    let o = Oprec::migrated();
    assert!(o.run(&["controls"]).ok().contains("no controls in force"));
    let paused = o
        .run(&[
            "pause",
            "--kind",
            "demo.slow",
            "--reason",
            "deploy in progress",
            "--actor",
            "alice",
            "--json",
        ])
        .json();
    assert_eq!(paused["control"]["action"], "pause");
    assert!(paused["control"]["until"].is_null());
    o.run(&["pause", "--class", "rate_limited", "--until", "2h"])
        .ok();
    let text = o
        .run(&[
            "postpone",
            "--dependency",
            "stripe",
            "--until",
            "30m",
            "--reason",
            "maintenance window",
        ])
        .ok()
        .to_owned();
    assert!(
        text.starts_with("postponed dependency stripe until"),
        "{text}"
    );

    let listed = o.run(&["controls", "--json"]).json();
    let rows: Vec<(String, String, String, bool)> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["scope"].as_str().unwrap().to_owned(),
                c["value"].as_str().unwrap().to_owned(),
                c["action"].as_str().unwrap().to_owned(),
                c["until"].is_string(),
            )
        })
        .collect();
    assert_eq!(
        rows,
        vec![
            (
                "dependency".into(),
                "stripe".into(),
                "postpone".into(),
                true
            ),
            (
                "failure_class".into(),
                "rate_limited".into(),
                "pause".into(),
                true
            ),
            ("kind".into(), "demo.slow".into(), "pause".into(), false),
        ]
    );
    let table = o.run(&["controls"]).ok().to_owned();
    assert!(
        table.contains("deploy in progress") && table.contains("alice"),
        "{table}"
    );

    // Paused work waits; the rest runs.
    let slow = o.enqueue("demo.slow", r#"{"ms": 1}"#);
    let noop = o.enqueue("demo.noop", "{}");
    // A paused operation is no work for this worker: it still stops when idle.
    work(&o);
    assert_eq!(o.show(&noop)["operation"]["status"], "succeeded");
    assert_eq!(o.show(&slow)["operation"]["status"], "pending");

    let resumed = o.run(&["resume", "--kind", "demo.slow", "--json"]).json();
    assert_eq!(resumed["control_removed"], true);
    assert!(resumed["released_held"].is_null());
    let again = o.run(&["resume", "--kind", "demo.slow"]).ok().to_owned();
    assert!(again.contains("no pause or postponement"), "{again}");
    work(&o);
    assert_eq!(o.show(&slow)["operation"]["status"], "succeeded");

    let audit = o.run(&["audit", "--json"]).json();
    let actions: Vec<&str> = audit
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["action"].as_str().unwrap())
        .collect();
    assert_eq!(
        actions,
        ["resume", "postpone", "pause", "pause"],
        "resuming what was not paused changed nothing"
    );
    assert_eq!(audit[3]["actor"], "alice");
    assert_eq!(audit[3]["reason"], "deploy in progress");
    assert_eq!(audit[3]["filter"]["scope"], "kind");

    // Filtered by action and paged by entry id, newest first either way.
    let actions_of = |args: &[&str]| -> Vec<String> {
        let mut all = vec!["audit", "--json"];
        all.extend_from_slice(args);
        o.run(&all)
            .json()
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["action"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(actions_of(&["--action", "pause"]), ["pause", "pause"]);
    let id = |i: usize| audit[i]["id"].as_i64().unwrap().to_string();
    assert_eq!(
        actions_of(&["--older-than", &id(1), "--limit", "1"]),
        ["pause"]
    );
    assert_eq!(
        actions_of(&["--newer-than", &id(3), "--limit", "2"]),
        ["postpone", "pause"],
        "the two just newer than the oldest, newest first"
    );
    let table = o.run(&["audit", "--actor", "nobody"]).ok().to_owned();
    assert!(table.contains("no audit entry matches"), "{table}");
    let listed = o.run(&["audit"]).ok().to_owned();
    assert!(listed.lines().next().unwrap().starts_with("ID"), "{listed}");
    o.run(&["audit", "--actor", ""])
        .bad_input("printable characters");
    let both = o.run(&["audit", "--older-than", "1", "--newer-than", "2"]);
    assert_eq!(both.code, Some(2), "{both:?}");
}

#[test]
fn resuming_a_dependency_releases_what_its_configuration_failure_held() {
    let o = Oprec::migrated();
    let held: Vec<String> = (0..2)
        .map(|_| {
            o.enqueue(
                "demo.flaky",
                r#"{"fail_times": 1, "class": "configuration"}"#,
            )
        })
        .collect();
    let quarantined = o.enqueue("demo.slow", r#"{"ms": 1}"#);
    o.run(&[
        "quarantine",
        "--id",
        &quarantined,
        "--reason",
        "checking it",
        "--yes",
    ])
    .ok();
    work(&o);
    for id in &held {
        let op = o.show(id);
        assert_eq!(op["operation"]["status"], "held", "{op}");
        assert_eq!(op["operation"]["last_failure_class"], "configuration");
    }
    o.run(&[
        "pause",
        "--dependency",
        "demo-provider",
        "--reason",
        "rotating the API key",
    ])
    .ok();
    let resumed = o
        .run(&[
            "resume",
            "--dependency",
            "demo-provider",
            "--reason",
            "new key deployed",
            "--json",
        ])
        .json();
    assert_eq!(resumed["control_removed"], true);
    assert_eq!(
        resumed["released_held"], 2,
        "only the configuration failures, not the quarantined one"
    );
    assert_eq!(o.show(&quarantined)["operation"]["status"], "held");
    work(&o);
    for id in &held {
        assert_eq!(o.show(id)["operation"]["status"], "succeeded");
    }
    let text = o
        .run(&["resume", "--dependency", "demo-provider"])
        .ok()
        .to_owned();
    assert!(text.contains("released 0 held operations"), "{text}");
    let audit = o.run(&["audit", "--json"]).json();
    assert_eq!(audit[0]["action"], "resume");
    assert_eq!(audit[0]["affected"], 2);
    assert_eq!(audit[0]["reason"], "new key deployed");
    assert_eq!(audit[1]["action"], "pause");
}

#[test]
fn a_control_needs_exactly_one_target_and_a_future_until() {
    let o = Oprec::migrated();
    let none = o.run(&["pause"]);
    assert_eq!(none.code, Some(2), "{none:?}");
    let two = o.run(&["pause", "--kind", "a", "--class", "transient"]);
    assert_eq!(two.code, Some(2), "{two:?}");
    o.run(&["pause", "--class", "flaky"])
        .bad_input("unknown failure class \"flaky\"");
    o.run(&[
        "pause",
        "--kind",
        "demo.noop",
        "--until",
        "2001-01-01T00:00:00Z",
    ])
    .bad_input("is not in the future");
    o.run(&["pause", "--kind", "demo.noop", "--until", "whenever"])
        .bad_input("--until");
    o.run(&["postpone", "--dependency", "x", "--until=-5m"])
        .bad_input("--until");
    let missing = o.run(&["postpone", "--dependency", "x"]);
    assert_eq!(missing.code, Some(2), "{missing:?}");
    o.run(&["pause", "--dependency", " "])
        .bad_input("--dependency must not be empty");
    assert_eq!(o.run(&["controls", "--json"]).json(), Value::Array(vec![]));
}
