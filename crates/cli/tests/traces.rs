//! The producer's trace context through the binary: `oprec enqueue --traceparent` stores it,
//! `ops show` (text and `--json`) shows it, a malformed one exits 2 with nothing stored, and it
//! survives archive and restore on both stores.

mod common;
mod pg;

use common::Oprec;
use pg::Pg;
use serde_json::Value;

const TP: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

fn enqueue_traced(o: &Oprec) -> String {
    let v = o
        .run(&[
            "enqueue",
            "--kind",
            "demo.flaky",
            "--payload",
            r#"{"fail_times": 99, "class": "transient"}"#,
            "--traceparent",
            TP,
            "--json",
        ])
        .json();
    v["id"].as_str().expect("id").to_owned()
}

fn round_trip(o: &Oprec) {
    let id = enqueue_traced(o);
    assert_eq!(o.show(&id)["operation"]["traceparent"], TP);
    let text = o.run(&["ops", "show", &id]);
    assert!(
        text.ok()
            .lines()
            .any(|l| l.starts_with("traceparent") && l.ends_with(TP)),
        "{}",
        text.stdout
    );
    // Dead after one attempt, archived, restored: the trace context comes back with it.
    o.run(&[
        "--transport",
        "poll",
        "worker",
        "--demo",
        "--demo-max-attempts",
        "1",
        "--exit-when-idle",
    ])
    .ok();
    let file = o.path("traced.jsonl");
    let to = file.to_str().unwrap();
    o.run(&["archive", "--status", "dead", "--to", to, "--yes"])
        .ok();
    let line: Value = serde_json::from_str(
        std::fs::read_to_string(&file)
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(line["record"]["operation"]["traceparent"], TP);
    assert_eq!(o.run(&["ops", "show", &id]).code, Some(1));
    let back = o.run(&["archive", "restore", to, "--json"]).json();
    assert_eq!(back["restored"], 1, "{back}");
    assert_eq!(o.show(&id)["operation"]["traceparent"], TP);
}

#[test]
fn a_traceparent_is_stored_shown_and_survives_archive_and_restore_on_sqlite() {
    round_trip(&Oprec::migrated());
}

#[test]
fn a_traceparent_is_stored_shown_and_survives_archive_and_restore_on_postgres() {
    let (_db, o) = Pg::fresh();
    round_trip(&o);
}

#[test]
fn a_malformed_traceparent_exits_2_and_stores_nothing() {
    let o = Oprec::migrated();
    for bad in [
        "garbage",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
    ] {
        o.run(&[
            "enqueue",
            "--kind",
            "demo.noop",
            "--payload",
            "{}",
            "--traceparent",
            bad,
        ])
        .bad_input("is not a W3C trace context");
    }
    let listed = o.run(&["ops", "list", "--json"]).json();
    assert_eq!(listed.as_array().map(Vec::len), Some(0), "{listed}");
}
