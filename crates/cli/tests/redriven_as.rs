//! A dead operation re-driven as new is no longer dead awaiting action, on SQLite and on
//! PostgreSQL, through the `oprec` binary: `stats` (human and `--json`) counts it apart, `ops list
//! --status dead` hides it unless `--redriven show|only` asks (marked "re-driven"), `ops show`
//! links the original to its copy and the copy to its original, and the worker's
//! `oprec_dead_operations` gauge drops while `oprec_dead_redriven_operations` counts it.

mod background;
mod common;
mod pg;

use std::time::{Duration, Instant};

use background::Background;
use common::{Oprec, free_port, sample, scrape};
use pg::Pg;

/// The ids `ops list` prints as JSON with `args`, sorted.
fn ids(o: &Oprec, args: &[&str]) -> Vec<String> {
    let all = [&["ops", "list", "--json"][..], args].concat();
    let mut v: Vec<String> = o
        .run(&all)
        .json()
        .as_array()
        .expect("a JSON array")
        .iter()
        .map(|op| op["id"].as_str().expect("id").to_owned())
        .collect();
    v.sort();
    v
}

/// The value of the field `name` in `ops show`'s layout.
fn field<'a>(text: &'a str, name: &str) -> &'a str {
    text.lines()
        .find_map(|l| l.strip_prefix(name).filter(|rest| rest.starts_with("  ")))
        .map(str::trim)
        .unwrap_or_else(|| panic!("no field {name:?} in {text}"))
}

/// Three dead demo.flaky operations, two of them re-driven as new; checks every view of them and
/// returns (the two originals, their copies, the one left dead).
fn two_of_three_redriven(o: &Oprec) -> (Vec<String>, Vec<String>, String) {
    o.dead_flaky(3);
    let dead = ids(o, &["--status", "dead"]);
    assert_eq!(dead.len(), 3);
    let done = o
        .run(&[
            "redrive", "--as-new", "--id", &dead[0], "--id", &dead[1], "--yes", "--json",
        ])
        .json();
    assert_eq!(done["redriven"], 2, "{done}");

    // ops show links both ways.
    let mut copies = Vec::new();
    for original in &dead[..2] {
        let shown = o.show(original);
        let op = &shown["operation"];
        assert_eq!(op["status"], "dead", "the status is kept: {shown}");
        let copy = op["redriven_as"]
            .as_str()
            .expect("linked to its copy")
            .to_owned();
        let back = o.show(&copy);
        assert_eq!(back["operation"]["redrive_of"], original.as_str());
        assert!(back["operation"]["redriven_as"].is_null());
        let text = o.run(&["ops", "show", original]).ok().to_owned();
        assert!(field(&text, "re-driven as").starts_with(&copy), "{text}");
        let text = o.run(&["ops", "show", &copy]).ok().to_owned();
        assert_eq!(field(&text, "redrive of"), original.as_str(), "{text}");
        copies.push(copy);
    }

    // Listing the dead: those awaiting action unless asked.
    assert_eq!(ids(o, &["--status", "dead"]), vec![dead[2].clone()]);
    assert_eq!(
        ids(o, &["--status", "dead", "--redriven", "only"]),
        dead[..2].to_vec()
    );
    assert_eq!(ids(o, &["--status", "dead", "--redriven", "show"]), dead);
    assert_eq!(ids(o, &[]).len(), 5, "every operation without a status");
    let table = o
        .run(&["ops", "list", "--status", "dead", "--redriven", "show"])
        .ok()
        .to_owned();
    assert_eq!(
        table
            .matches("dead (attempts_exhausted), re-driven")
            .count(),
        2,
        "{table}"
    );
    o.run(&["ops", "list", "--redriven", "maybe"])
        .bad_input("--redriven");
    let none = o
        .run(&["ops", "list", "--status", "dead", "--kind", "demo.noop"])
        .ok()
        .to_owned();
    assert!(none.contains("no dead operations await action"), "{none}");

    // stats counts them apart.
    let stats = o.run(&["stats", "--json"]).json();
    assert_eq!(stats["by_status"]["dead"], 1, "{stats}");
    assert_eq!(stats["by_status"]["pending"], 2, "{stats}");
    assert_eq!(stats["dead_by_kind"]["demo.flaky"], 1, "{stats}");
    assert_eq!(stats["dead_redriven_by_kind"]["demo.flaky"], 2, "{stats}");
    let text = o.run(&["stats"]).ok().to_owned();
    assert!(text.contains("and 2 dead re-driven as new"), "{text}");
    (dead[..2].to_vec(), copies, dead[2].clone())
}

#[test]
fn a_redriven_original_is_no_longer_dead_awaiting_action_on_sqlite() {
    let o = Oprec::migrated();
    two_of_three_redriven(&o);

    // The gauges, with the copies held back so that they do not run (and die) meanwhile.
    o.run(&["pause", "--kind", "demo.flaky", "--reason", "test"])
        .ok();
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let _worker = Background::start(
        &o,
        &[
            "--transport",
            "poll",
            "worker",
            "--demo",
            "--metrics-listen",
            &addr,
        ],
    );
    let began = Instant::now();
    let text = loop {
        if let Some(t) = scrape(port)
            && sample(&t, r#"oprec_dead_redriven_operations{kind="demo.flaky"}"#).is_some()
        {
            break t;
        }
        assert!(
            began.elapsed() < Duration::from_secs(30),
            "no gauges: {:?}",
            scrape(port)
        );
        std::thread::sleep(Duration::from_millis(300));
    };
    assert_eq!(
        sample(&text, r#"oprec_dead_operations{kind="demo.flaky"}"#),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        sample(
            &text,
            r#"oprec_dead_redriven_operations{kind="demo.flaky"}"#
        ),
        Some(2.0)
    );
    assert_eq!(
        sample(&text, r#"oprec_operations{status="dead"}"#),
        Some(1.0)
    );
}

#[test]
fn a_redriven_original_is_no_longer_dead_awaiting_action_on_postgres() {
    let (db, o) = Pg::fresh();
    let (originals, copies, left) = two_of_three_redriven(&o);
    // The operator's own SQL sees the same: the column names the copy.
    assert_eq!(
        db.int("SELECT count(*) FROM operations WHERE status = 'dead' AND redriven_as IS NULL"),
        1
    );
    for (original, copy) in originals.iter().zip(&copies) {
        assert_eq!(
            db.text(&format!(
                "SELECT redriven_as::text FROM operations WHERE id = '{original}'"
            )),
            Some(copy.clone())
        );
    }
    assert_eq!(
        db.int(&format!(
            "SELECT count(*) FROM operations WHERE id = '{left}' AND redriven_as IS NULL"
        )),
        1
    );
}
