//! Bad input to the operator's commands: unknown filter values, malformed durations, ids and
//! rates, both `--rate` and `--spread`, and hostile `--error-contains` strings get one clear line
//! and exit 2, or a correct empty result; nothing reaches SQL but as a bind parameter, so the
//! tables are intact afterwards.

mod common;

use common::Oprec;

fn dead_one(o: &Oprec) -> String {
    let id = o.enqueue("demo.flaky", r#"{"fail_times": 9, "class": "permanent"}"#);
    o.work_until_idle();
    id
}

#[test]
fn unknown_filter_values() {
    let o = Oprec::migrated();
    o.run(&["redrive", "--class", "flaky"])
        .bad_input("unknown failure class \"flaky\"; expected one of: transient");
    o.run(&["redrive", "--reason", "oops"])
        .bad_input("unknown terminal reason \"oops\"");
    o.run(&["quarantine", "--class", "sometimes", "--reason", "r"])
        .bad_input("unknown failure class");
    o.run(&["release", "--class", "PERMANENT"])
        .bad_input("unknown failure class");
    o.run(&["redrive", "--kind", ""])
        .bad_input("--kind must not be empty");
    // An unknown kind is a correct empty result: kinds are open-ended.
    let none = o
        .run(&["redrive", "--kind", "no.such.kind", "--dry-run", "--json"])
        .json();
    assert_eq!(none["matched"], 0);
}

#[test]
fn malformed_durations_ids_and_rates() {
    let o = Oprec::migrated();
    o.run(&["redrive", "--since", "5 parsecs"])
        .bad_input("--since");
    o.run(&["redrive", "--until", "tomorrow-ish"])
        .bad_input("--until");
    o.run(&["redrive", "--since", "1h", "--until", "2h"])
        .bad_input("is not before --until");
    o.run(&["redrive", "--extend-deadline", "0s"])
        .bad_input("--extend-deadline must be longer than zero");
    o.run(&["redrive", "--spread", "soon"])
        .bad_input("--spread");
    o.run(&["redrive", "--spread", "0s"]).bad_input("--spread");
    o.run(&["redrive", "--id", "42"])
        .bad_input("not an operation id");
    o.run(&["redrive", "--id", "'; DROP TABLE operations; --"])
        .bad_input("not an operation id");
    o.run(&["redrive", "--limit", "0"]).bad_input("--limit");
    o.run(&["redrive", "--rate", "0/s"])
        .bad_input("--rate \"0/s\" lets nothing through");
    o.run(&["redrive", "--rate", "fast"])
        .bad_input("is not a rate");
    o.run(&["redrive", "--rate", "500"]).bad_input("500/s");
    o.run(&["redrive", "--rate=-1/s"]).bad_input("--rate");
    o.run(&["redrive", "--rate", "10/fortnight"])
        .bad_input("is not a rate");
    o.run(&["redrive", "--rate", "500/s", "--spread", "10s"])
        .bad_input("give --rate or --spread, not both");
    let both = o.run(&["redrive", "--dry-run", "--yes"]);
    assert_eq!(both.code, Some(2), "{both:?}");
    o.run(&["reconcile", "resolve", "x", "--applied"])
        .bad_input("not an operation id");
    let neither = o.run(&[
        "reconcile",
        "resolve",
        "0194c2a1-7b3e-7c4d-9a2b-3f1e5d6c7b8a",
    ]);
    assert_eq!(neither.code, Some(2), "{neither:?}");
    o.run(&[
        "reconcile",
        "resolve",
        "0194c2a1-7b3e-7c4d-9a2b-3f1e5d6c7b8a",
        "--not-applied",
        "--remote-id",
        "ch_1",
    ])
    .bad_input("--remote-id goes with --applied");
    o.run(&["reconcile", "list", "--limit", "0"])
        .bad_input("--limit");
    o.run(&["audit", "--limit", "100000"]).bad_input("--limit");
    o.run(&["redrive", "--actor", " "])
        .bad_input("--actor must not be empty");
}

#[test]
fn hostile_error_contains_is_only_text() {
    let o = Oprec::migrated();
    let id = dead_one(&o);
    for hostile in [
        "' OR 1=1 --",
        "%",
        "_",
        "\"; DROP TABLE operations; --",
        "') UNION SELECT id FROM operations --",
        "simulated%failure",
    ] {
        let v = o
            .run(&[
                "redrive",
                "--error-contains",
                hostile,
                "--dry-run",
                "--json",
            ])
            .json();
        assert_eq!(v["matched"], 0, "{hostile:?} is taken literally: {v}");
        let q = o
            .run(&[
                "quarantine",
                "--error-contains",
                hostile,
                "--reason",
                "r",
                "--json",
            ])
            .json();
        assert_eq!(q["matched"], 0, "{hostile:?}");
    }
    // Literal, case-insensitive text still finds what it names.
    let found = o
        .run(&[
            "redrive",
            "--error-contains",
            "SIMULATED PERMANENT",
            "--dry-run",
            "--json",
        ])
        .json();
    assert_eq!(found["matched"], 1);
    let long = "x".repeat(100_000);
    o.run(&["redrive", "--error-contains", &long])
        .bad_input("--error-contains is 100000 characters long");
    o.run(&["redrive", "--error-contains", ""])
        .bad_input("--error-contains must not be empty");
    // The table is intact.
    assert_eq!(o.show(&id)["operation"]["status"], "dead");
}

#[test]
fn the_operator_commands_have_help() {
    let commands: &[&[&str]] = &[
        &["redrive"],
        &["pause"],
        &["resume"],
        &["postpone"],
        &["controls"],
        &["quarantine"],
        &["release"],
        &["cancel"],
        &["reconcile"],
        &["reconcile", "list"],
        &["reconcile", "resolve"],
        &["stats"],
        &["audit"],
    ];
    for args in commands {
        let out = common::bin().args(*args).arg("--help").output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {text}");
        assert!(text.contains("Usage: oprec"), "{args:?}: {text}");
    }
    let out = common::bin().args(["redrive", "--help"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    for flag in [
        "--kind",
        "--class",
        "--reason",
        "--error-contains",
        "--since",
        "--until",
        "--id",
        "--limit",
        "--include-cancelled",
        "--dry-run",
        "--yes",
        "--as-new",
        "--extend-deadline",
        "--rate",
        "--spread",
        "--actor",
        "--note",
        "--json",
    ] {
        assert!(text.contains(flag), "redrive --help lacks {flag}");
    }
    let out = common::bin().args(["worker", "--help"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    for flag in [
        "--metrics-listen",
        "--dead-letter-webhook",
        "--reconcile-interval",
    ] {
        assert!(text.contains(flag), "worker --help lacks {flag}");
    }
}
