//! `oprec quarantine`, `oprec release` and `oprec cancel` on SQLite: pending work moved to held
//! with a reason (and only with `--yes`), released after the fix, or cancelled; what cannot be
//! cancelled is named with its status.

mod common;

use common::Oprec;

fn work(o: &Oprec) {
    o.work_until_idle();
}

#[test]
fn malformed_input_is_quarantined_then_released() {
    let o = Oprec::migrated();
    let bad: Vec<String> = (0..3)
        .map(|i| {
            o.enqueue(
                "demo.slow",
                &format!(r#"{{"ms": 1, "importer": "v2", "n": {i}}}"#),
            )
        })
        .collect();
    let good = o.enqueue("demo.noop", "{}");

    let counted = o
        .run(&[
            "quarantine",
            "--kind",
            "demo.slow",
            "--reason",
            "importer v2 writes bad rows",
        ])
        .ok()
        .to_owned();
    assert!(
        counted.contains("3 pending operations match")
            && counted.contains("nothing was changed: add --yes"),
        "{counted}"
    );
    assert_eq!(o.show(&bad[0])["operation"]["status"], "pending");

    let moved = o
        .run(&[
            "quarantine",
            "--kind",
            "demo.slow",
            "--reason",
            "importer v2 writes bad rows",
            "--actor",
            "carol",
            "--yes",
            "--json",
        ])
        .json();
    assert_eq!(moved["moved"], 3);
    let op = o.show(&bad[0]);
    assert_eq!(op["operation"]["status"], "held");
    let decision = op["operation"]["last_error"]["decision"].as_str().unwrap();
    assert!(
        decision.contains("carol") && decision.contains("importer v2 writes bad rows"),
        "{decision}"
    );
    work(&o);
    assert_eq!(o.show(&good)["operation"]["status"], "succeeded");
    assert_eq!(
        o.show(&bad[1])["operation"]["status"],
        "held",
        "not claimed"
    );

    // Release one by id, then the rest by kind.
    let one = o
        .run(&["release", "--id", &bad[0], "--yes", "--json"])
        .json();
    assert_eq!(one["moved"], 1);
    o.run(&["release", "--yes"])
        .bad_input("release with no filter would touch every held operation");
    let dry = o.run(&["release", "--kind", "demo.slow", "--json"]).json();
    assert_eq!(
        (dry["matched"].as_u64(), dry["changed"].as_bool()),
        (Some(2), Some(false))
    );
    let text = o
        .run(&[
            "release",
            "--kind",
            "demo.slow",
            "--reason",
            "importer fixed",
            "--yes",
        ])
        .ok()
        .to_owned();
    assert!(text.contains("released 2 held operations"), "{text}");
    work(&o);
    for id in &bad {
        assert_eq!(o.show(id)["operation"]["status"], "succeeded");
    }
    let audit = o.run(&["audit", "--json"]).json();
    let actions: Vec<&str> = audit
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["action"].as_str().unwrap())
        .collect();
    assert_eq!(actions, ["release", "release", "quarantine"]);
    assert_eq!(audit[2]["affected"], 3);
    assert_eq!(audit[2]["filter"]["kinds"][0], "demo.slow");
    let listing = o.run(&["audit"]).ok().to_owned();
    assert!(
        listing.contains("carol")
            && listing.contains("quarantine")
            && listing.contains("importer fixed"),
        "{listing}"
    );
}

/// Quarantine and release keep an enqueue's `--delay`: released work becomes eligible when it
/// was due, not at once.
#[test]
fn a_released_operation_keeps_its_delay() {
    let o = Oprec::migrated();
    let later = o
        .run(&[
            "enqueue",
            "--kind",
            "demo.noop",
            "--payload",
            "{}",
            "--delay",
            "1h",
            "--json",
        ])
        .json();
    let id = later["id"].as_str().expect("an id").to_owned();
    let due = o.show(&id)["operation"]["next_eligible_at"].clone();
    o.run(&["quarantine", "--id", &id, "--reason", "checking", "--yes"])
        .ok();
    o.run(&["release", "--id", &id, "--yes"]).ok();
    let op = o.show(&id);
    assert_eq!(op["operation"]["status"], "pending");
    assert_eq!(
        op["operation"]["next_eligible_at"], due,
        "the release keeps the delay"
    );
    work(&o);
    assert_eq!(
        o.show(&id)["operation"]["attempt"],
        0,
        "not claimed before its time"
    );
}

#[test]
fn quarantine_respects_the_limit_and_needs_a_filter_and_a_reason() {
    let o = Oprec::migrated();
    o.run(&[
        "enqueue",
        "--kind",
        "demo.slow",
        "--payload",
        r#"{"ms": 1}"#,
        "--count",
        "1200",
    ])
    .ok();
    let moved = o
        .run(&[
            "quarantine",
            "--kind",
            "demo.slow",
            "--limit",
            "1100",
            "--reason",
            "r",
            "--yes",
            "--json",
        ])
        .json();
    assert_eq!(
        moved["moved"], 1100,
        "three batches, the last cut to the limit"
    );
    o.run(&["quarantine", "--reason", "everything", "--yes"])
        .bad_input("quarantine needs a filter");
    let no_reason = o.run(&["quarantine", "--kind", "demo.slow", "--yes"]);
    assert_eq!(no_reason.code, Some(2), "{no_reason:?}");
    o.run(&["quarantine", "--kind", "demo.slow", "--reason", "  "])
        .bad_input("--reason must not be empty");
}

#[test]
fn cancel_says_what_was_cancelled_and_what_was_not() {
    let o = Oprec::migrated();
    let done = o.enqueue("demo.noop", "{}");
    work(&o);
    let waiting = o.enqueue("demo.noop", "{}");
    let held = o.enqueue("demo.noop", "{}");
    o.run(&["quarantine", "--id", &held, "--reason", "hold", "--yes"])
        .ok();
    let missing = "0194c2a1-7b3e-7c4d-9a2b-3f1e5d6c7b8a";

    let run = o.run(&[
        "cancel",
        &waiting,
        &held,
        &done,
        missing,
        "--reason",
        "customer left",
    ]);
    assert_eq!(run.code, Some(1), "{run:?}");
    assert!(run.stdout.contains("cancelled 2:"), "{run:?}");
    assert!(
        run.stdout.contains(&format!("{done}  succeeded"))
            && run.stdout.contains(&format!("{missing}  not found")),
        "{run:?}"
    );
    assert!(
        run.stderr.contains("2 of 4 operations were not cancelled"),
        "{run:?}"
    );
    for id in [&waiting, &held] {
        assert_eq!(o.show(id)["operation"]["status"], "cancelled");
    }
    assert_eq!(o.show(&done)["operation"]["status"], "succeeded");

    let again = o.run(&["cancel", &waiting, "--json"]);
    assert_eq!(again.code, Some(1));
    let v: serde_json::Value = serde_json::from_str(&again.stdout).unwrap();
    assert_eq!(v["cancelled"], serde_json::json!([]));
    assert_eq!(v["not_cancelled"][0]["status"], "cancelled");

    let fresh = o.enqueue("demo.noop", "{}");
    let ok = o.run(&["cancel", &fresh, "--json"]).json();
    assert_eq!(ok["cancelled"][0], fresh.as_str());

    o.run(&["cancel", "not-an-id"])
        .bad_input("not an operation id");
    // No ids and no filter: a dry run over every waiting operation, changing nothing.
    let dry = o.run(&["cancel"]).ok().to_owned();
    assert!(dry.contains("nothing was changed: add --yes"), "{dry}");
    let audit = o.run(&["audit", "--json"]).json();
    let cancels: Vec<u64> = audit
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["action"] == "cancel")
        .map(|e| e["affected"].as_u64().unwrap())
        .collect();
    assert_eq!(
        cancels,
        [1, 2],
        "a cancel that cancelled nothing changed nothing"
    );
}

/// Who acted, in the audit log: `--actor`, else `OPREC_ACTOR`, else the login name from
/// `$USER`/`$LOGNAME`, else the system account; never a silent "unknown".
#[test]
fn the_actor_comes_from_the_flag_the_environment_or_the_account() {
    let o = Oprec::migrated();
    let ids: Vec<String> = (0..4).map(|_| o.enqueue("demo.noop", "{}")).collect();
    let quarantine = |id: &str, extra: &[&str], env: &[(&str, Option<&str>)]| {
        let args = [
            &["quarantine", "--id", id, "--reason", "look", "--yes"][..],
            extra,
        ]
        .concat();
        o.run_with_env(&args, env).ok();
    };
    quarantine(&ids[0], &[], &[("OPREC_ACTOR", Some("night-shift"))]);
    quarantine(
        &ids[1],
        &["--actor", "carol"],
        &[("OPREC_ACTOR", Some("night-shift"))],
    );
    quarantine(&ids[2], &[], &[("USER", Some("dave")), ("LOGNAME", None)]);
    quarantine(&ids[3], &[], &[("USER", None), ("LOGNAME", None)]);
    let account = std::process::Command::new("id")
        .arg("-un")
        .output()
        .expect("id -un");
    let account = String::from_utf8_lossy(&account.stdout).trim().to_owned();
    assert!(!account.is_empty());
    let audit = o.run(&["audit", "--json"]).json();
    let actors: Vec<&str> = audit
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .map(|e| e["actor"].as_str().unwrap())
        .collect();
    assert_eq!(actors, ["night-shift", "carol", "dave", account.as_str()]);
}
