//! Choosing operations by filter everywhere: `oprec ops list` lists newest first (as the dashboard
//! does) with the filters of `oprec redrive`; `oprec cancel` and `oprec reconcile resolve` take
//! the same filters, count first and change nothing without `--yes`, and want `--all` for no
//! filter at all. Each case runs on SQLite and on PostgreSQL (its own schema).

mod common;
mod pg;

use common::Oprec;
use pg::Pg;
use serde_json::Value;

/// The ids of a JSON listing, in its order.
fn ids(listed: &Value) -> Vec<String> {
    listed
        .as_array()
        .expect("a JSON array")
        .iter()
        .map(|o| o["id"].as_str().expect("id").to_owned())
        .collect()
}

/// `ops list ARGS --json`, as ids.
fn list(o: &Oprec, args: &[&str]) -> Vec<String> {
    ids(&o
        .run(&[&["ops", "list", "--json"][..], args].concat())
        .json())
}

/// A worker run to idle, poll-only, with the demo kinds and one attempt each.
fn work_once(o: &Oprec) {
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
}

fn ops_list_has_the_filters_of_redrive(o: &Oprec) {
    // Oldest to newest: one malformed (dead, permanent), two transient (dead, attempts
    // exhausted), one unknown outcome (reconciling), then a waiting no-op.
    let malformed = o.enqueue("demo.flaky", r#"{"fail_times": 1, "class": "nonsense"}"#);
    let t1 = o.enqueue("demo.flaky", r#"{"fail_times": 9, "class": "transient"}"#);
    let t2 = o.enqueue("demo.flaky", r#"{"fail_times": 9, "class": "transient"}"#);
    let unknown = o.enqueue("demo.flaky", r#"{"fail_times": 9, "class": "unknown"}"#);
    work_once(o);
    let noop = o
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
        .json()["id"]
        .as_str()
        .unwrap()
        .to_owned();

    let newest_first = vec![
        noop.clone(),
        unknown.clone(),
        t2.clone(),
        t1.clone(),
        malformed.clone(),
    ];
    assert_eq!(list(o, &[]), newest_first, "newest first by default");
    let mut oldest_first = newest_first.clone();
    oldest_first.reverse();
    assert_eq!(list(o, &["--oldest-first"]), oldest_first);
    // Pages follow the order asked for.
    assert_eq!(list(o, &["--limit", "2"]), [noop.clone(), unknown.clone()]);
    assert_eq!(
        list(o, &["--limit", "2", "--after", &unknown]),
        [t2.as_str(), t1.as_str()]
    );
    assert_eq!(
        list(o, &["--oldest-first", "--after", &t2]),
        [unknown.as_str(), noop.as_str()]
    );
    let text = o.run(&["ops", "list", "--limit", "2"]).ok().to_owned();
    assert!(text.contains("newest first; next page: --after"), "{text}");

    // Every filter of redrive, each narrowing.
    assert_eq!(
        list(o, &["--kind", "demo.noop", "--kind", "demo.crash"]),
        [noop.as_str()]
    );
    assert_eq!(
        list(o, &["--class", "transient"]),
        [t2.as_str(), t1.as_str()]
    );
    assert_eq!(
        list(o, &["--class", "transient", "--class", "permanent"]),
        [t2.as_str(), t1.as_str(), malformed.as_str()]
    );
    assert_eq!(list(o, &["--reason", "permanent"]), [malformed.as_str()]);
    assert_eq!(
        list(
            o,
            &["--reason", "attempts_exhausted", "--reason", "permanent"]
        ),
        [t2.as_str(), t1.as_str(), malformed.as_str()]
    );
    assert_eq!(
        list(o, &["--error-contains", "MALFORMED PAYLOAD"]),
        [malformed.as_str()]
    );
    assert_eq!(
        list(o, &["--dependency", "demo-provider", "--status", "pending"]),
        [noop.as_str()]
    );
    assert!(list(o, &["--dependency", "elsewhere"]).is_empty());
    assert_eq!(
        list(o, &["--id", &t1, "--id", &noop, "--kind", "demo.flaky"]),
        [t1.as_str()]
    );
    // --since/--until bound the end, as redrive reads them: only ended operations match.
    assert_eq!(
        list(o, &["--since", "1h"]),
        [t2.as_str(), t1.as_str(), malformed.as_str()]
    );
    assert!(list(o, &["--until", "1h"]).is_empty());
    assert_eq!(list(o, &["--created-since", "1h"]).len(), 5);
    assert!(list(o, &["--created-until", "1h"]).is_empty());

    // Bad values are refused as redrive refuses them.
    o.run(&["ops", "list", "--reason", "tired"])
        .bad_input("--reason: unknown terminal reason");
    o.run(&["ops", "list", "--since", "soonish"])
        .bad_input("--since");
    o.run(&["ops", "list", "--since", "1h", "--until", "2h"])
        .bad_input("is not before --until");
    o.run(&[
        "ops",
        "list",
        "--created-since",
        "1h",
        "--created-until",
        "2h",
    ])
    .bad_input("--created-since is not before --created-until");
    o.run(&["ops", "list", "--limit", "10001"])
        .bad_input("--limit must be between 1 and 10,000");
    o.run(&["ops", "list", "--dependency", " "])
        .bad_input("--dependency must not be empty");
}

#[test]
fn ops_list_has_the_filters_of_redrive_on_sqlite() {
    ops_list_has_the_filters_of_redrive(&Oprec::migrated());
}

#[test]
fn ops_list_has_the_filters_of_redrive_on_postgres() {
    let (_db, o) = Pg::fresh();
    ops_list_has_the_filters_of_redrive(&o);
}

fn cancel_by_filter_counts_first(o: &Oprec) {
    let delayed = [
        "enqueue",
        "--kind",
        "demo.noop",
        "--payload",
        "{}",
        "--delay",
        "1h",
        "--count",
        "3",
    ];
    o.run(&delayed).ok();
    let flaky = o.enqueue("demo.flaky", r#"{"fail_times": 1}"#);

    // Without --yes: a dry run that exits 0 and changes nothing.
    let dry = o.run(&["cancel", "--kind", "demo.noop", "--json"]).json();
    assert_eq!(
        (&dry["matched"], &dry["would_cancel"], &dry["changed"]),
        (&Value::from(3), &Value::from(3), &Value::from(false)),
        "{dry}"
    );
    let text = o.run(&["cancel", "--kind", "demo.noop"]).ok().to_owned();
    assert!(
        text.contains("3 pending, held or reconciling operations match")
            && text.contains("add --yes"),
        "{text}"
    );
    assert!(list(o, &["--status", "cancelled"]).is_empty());

    // --yes with no filter wants --all; a filter (or --all) does it.
    o.run(&["cancel", "--yes"])
        .bad_input("cancel with no filter would touch every waiting operation");
    o.run(&["cancel", &flaky, "--kind", "demo.noop"])
        .bad_input("either as ids or as filters");
    let done = o
        .run(&[
            "cancel",
            "--kind",
            "demo.noop",
            "--limit",
            "2",
            "--yes",
            "--json",
        ])
        .json();
    assert_eq!(done["count"], 2, "{done}");
    let done = o
        .run(&[
            "cancel",
            "--kind",
            "demo.noop",
            "--yes",
            "--reason",
            "not needed",
        ])
        .ok()
        .to_owned();
    assert!(done.contains("cancelled 1 operations"), "{done}");
    assert_eq!(list(o, &["--status", "cancelled"]).len(), 3);
    assert_eq!(
        o.show(&flaky)["operation"]["status"],
        "pending",
        "outside the filter"
    );
    let audit = o.run(&["audit", "--json"]).json();
    let cancels: Vec<&Value> = audit
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["action"] == "cancel")
        .collect();
    assert_eq!(cancels.len(), 2, "{audit}");
    assert_eq!(cancels[0]["filter"]["kinds"][0], "demo.noop", "{audit}");

    // Ids still cancel at once, as before.
    let by_id = o.run(&["cancel", &flaky, "--json"]).json();
    assert_eq!(by_id["cancelled"][0], flaky.as_str(), "{by_id}");
    let none = o.run(&["cancel", "--all", "--yes", "--json"]).json();
    assert_eq!(none["count"], 0, "nothing left to cancel: {none}");
}

#[test]
fn cancel_by_filter_counts_first_on_sqlite() {
    cancel_by_filter_counts_first(&Oprec::migrated());
}

#[test]
fn cancel_by_filter_counts_first_on_postgres() {
    let (_db, o) = Pg::fresh();
    cancel_by_filter_counts_first(&o);
}

fn resolve_by_filter_counts_first(o: &Oprec) {
    let unknown = r#"{"fail_times": 9, "class": "unknown"}"#;
    let a = o.enqueue("demo.flaky", unknown);
    let b = o.enqueue("demo.flaky", unknown);
    let c = o.enqueue("demo.flaky", unknown);
    work_once(o);
    assert_eq!(list(o, &["--status", "reconciling"]).len(), 3);

    let dry = o
        .run(&[
            "reconcile",
            "resolve",
            "--not-applied",
            "--kind",
            "demo.flaky",
            "--json",
        ])
        .json();
    assert_eq!(
        (&dry["matched"], &dry["would_resolve"], &dry["changed"]),
        (&Value::from(3), &Value::from(3), &Value::from(false)),
        "{dry}"
    );
    assert_eq!(list(o, &["--status", "reconciling"]).len(), 3, "unchanged");
    o.run(&["reconcile", "resolve", "--applied", "--yes"])
        .bad_input("--all");
    o.run(&[
        "reconcile",
        "resolve",
        "--applied",
        "--kind",
        "demo.flaky",
        "--remote-id",
        "ch_1",
    ])
    .bad_input("--remote-id names one effect");
    o.run(&[
        "reconcile",
        "resolve",
        &a,
        "--applied",
        "--kind",
        "demo.flaky",
    ])
    .bad_input("either as an id or as filters");

    let done = o
        .run(&[
            "reconcile",
            "resolve",
            "--applied",
            "--id",
            &a,
            "--id",
            &b,
            "--yes",
            "--reason",
            "found both charges",
            "--json",
        ])
        .json();
    assert_eq!(done["count"], 2, "{done}");
    assert_eq!(done["statuses"]["succeeded"], 2, "{done}");
    assert_eq!(o.show(&a)["operation"]["status"], "succeeded");
    // The rest: not applied, so pending again (or dead, its one attempt spent).
    let text = o
        .run(&["reconcile", "resolve", "--not-applied", "--all", "--yes"])
        .ok()
        .to_owned();
    assert!(
        text.contains("resolved 1 operations as not applied"),
        "{text}"
    );
    assert_ne!(o.show(&c)["operation"]["status"], "reconciling");
    let audit = o.run(&["audit", "--json"]).json();
    assert_eq!(
        audit
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["action"] == "reconcile_resolve")
            .count(),
        2,
        "one entry per command: {audit}"
    );
}

#[test]
fn resolve_by_filter_counts_first_on_sqlite() {
    resolve_by_filter_counts_first(&Oprec::migrated());
}

#[test]
fn resolve_by_filter_counts_first_on_postgres() {
    let (_db, o) = Pg::fresh();
    resolve_by_filter_counts_first(&o);
}
