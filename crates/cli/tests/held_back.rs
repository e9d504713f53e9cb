//! Paused and postponed work is visible: `oprec stats` (text and `--json`) names each control in
//! force with the eligible work it holds back, and leaves that work out of the oldest eligible
//! operation; `oprec ops list` marks the operations a control holds back. On SQLite and on
//! PostgreSQL (its own schema).

mod common;
mod pg;

use common::Oprec;
use pg::Pg;

fn paused_work_is_visible(o: &Oprec) {
    o.run(&["pause", "--kind", "demo.noop", "--reason", "maintenance"])
        .ok();
    o.run(&[
        "postpone",
        "--dependency",
        "shipping-provider",
        "--until",
        "1h",
        "--reason",
        "their outage",
    ])
    .ok();
    let paused: Vec<String> = (0..2).map(|_| o.enqueue("demo.noop", "{}")).collect();
    let free = o.enqueue("demo.flaky", r#"{"fail_times": 0}"#);
    // A kind the example kinds file declares, calling the postponed dependency.
    let kinds = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/kinds.toml");
    let postponed = o
        .run(&[
            "enqueue",
            "--kinds-file",
            kinds,
            "--kind",
            "shipment.create",
            "--payload",
            r#"{"order": 1}"#,
        ])
        .ok()
        .trim()
        .to_owned();

    let stats = o.run(&["stats", "--json"]).json();
    assert_eq!(
        stats["oldest_eligible"]["id"],
        free.as_str(),
        "the oldest eligible leaves paused work out: {stats}"
    );
    let held = stats["held_back"].as_array().expect("held_back");
    let kind = held
        .iter()
        .find(|h| h["scope"] == "kind")
        .expect("the kind's pause");
    assert_eq!(
        (&kind["value"], &kind["action"], &kind["eligible"]),
        (
            &"demo.noop".into(),
            &"pause".into(),
            &serde_json::Value::from(2)
        ),
        "{stats}"
    );
    assert_eq!(kind["oldest"]["id"], paused[0].as_str(), "{stats}");
    let dep = held
        .iter()
        .find(|h| h["scope"] == "dependency")
        .expect("the dependency's postponement");
    assert_eq!(dep["action"], "postpone");
    assert!(dep["until"].is_string(), "with its end: {stats}");
    assert_eq!(dep["eligible"], 1, "{stats}");
    assert_eq!(dep["oldest"]["id"], postponed.as_str(), "{stats}");

    let text = o.run(&["stats"]).ok().to_owned();
    assert!(text.contains("held back by controls in force"), "{text}");
    let line = text
        .lines()
        .find(|l| l.contains("kind demo.noop"))
        .unwrap_or_else(|| panic!("no line for the pause: {text}"));
    assert!(line.contains("pause") && line.contains(" 2 "), "{line}");
    let line = text
        .lines()
        .find(|l| l.contains("dependency shipping-provider"))
        .unwrap_or_else(|| panic!("no line for the postponement: {text}"));
    assert!(line.contains("postpone") && line.contains(" 1 "), "{line}");
    assert!(text.contains(&format!("oldest eligible: {free}")), "{text}");

    let listed = o.run(&["ops", "list"]).ok().to_owned();
    for id in &paused {
        let line = listed.lines().find(|l| l.contains(id.as_str())).unwrap();
        assert!(line.contains("pending (paused: kind demo.noop)"), "{line}");
    }
    let line = listed.lines().find(|l| l.contains(free.as_str())).unwrap();
    assert!(!line.contains("paused"), "{line}");
    let line = listed
        .lines()
        .find(|l| l.contains(postponed.as_str()))
        .unwrap();
    assert!(
        line.contains("(postponed until") && line.contains("dependency shipping-provider)"),
        "{line}"
    );
    let json = o.run(&["ops", "list", "--json"]).json();
    for op in json.as_array().unwrap() {
        let expected = if paused.iter().any(|p| op["id"] == p.as_str()) {
            Some("pause")
        } else if op["id"] == postponed.as_str() {
            Some("postpone")
        } else {
            None
        };
        assert_eq!(op["held_back"]["action"].as_str(), expected, "{op}");
    }

    // Resumed: nothing is held back, and the listing marks nothing.
    o.run(&["resume", "--kind", "demo.noop"]).ok();
    let stats = o.run(&["stats", "--json"]).json();
    assert_eq!(
        stats["oldest_eligible"]["id"],
        paused[0].as_str(),
        "{stats}"
    );
    assert_eq!(stats["held_back"].as_array().unwrap().len(), 1, "{stats}");
    assert!(!o.run(&["ops", "list"]).ok().contains("paused"));
}

#[test]
fn paused_work_is_visible_on_sqlite() {
    paused_work_is_visible(&Oprec::migrated());
}

#[test]
fn paused_work_is_visible_on_postgres() {
    let (_db, o) = Pg::fresh();
    paused_work_is_visible(&o);
}
