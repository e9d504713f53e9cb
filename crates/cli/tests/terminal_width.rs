//! Terminal output that fits: with `COLUMNS=80` every line a person reads from `ops list`,
//! `stats`, `controls`, `workers`, `audit` and a re-drive's dry run is at most 80 characters,
//! even with long kinds, errors and reasons in the data; `--wide` prints the full values;
//! `--json` is untouched by the width, and carries `last_error` in one shape everywhere.

mod background;
mod common;

use background::Background;
use common::{Oprec, free_port};

/// A kind name longer than a narrow terminal's table column.
const LONG_KIND: &str = "warehouse.shipment.create-with-a-rather-long-name-for-the-carrier-desk";
/// A reason longer than a narrow terminal.
const LONG_REASON: &str = "the carrier's sandbox rejects every label until their support desk \
                           rotates our credentials, expected tomorrow morning (ticket 4711)";

/// A kinds file with one kind whose endpoint refuses connections: its single attempt fails.
fn kinds_file(o: &Oprec) -> String {
    let path = o.path("kinds.toml");
    std::fs::write(
        &path,
        format!(
            r#"[[kind]]
name = "{LONG_KIND}"
dependency = "carrier-sandbox-with-a-long-dependency-name"
timeout = "2s"
max_attempts = 1
ladder = ["0s"]
jitter = "none"

[kind.http]
url = "http://127.0.0.1:{}/v1/labels/create-a-label-for-a-shipment-with-a-long-path"
"#,
            free_port()
        ),
    )
    .unwrap();
    path.to_str().unwrap().to_owned()
}

fn fits(text: &str, width: usize, what: &str) {
    for line in text.lines() {
        assert!(
            line.chars().count() <= width,
            "{what}: a line of {} characters:\n{line}\nin:\n{text}",
            line.chars().count()
        );
    }
}

#[test]
fn tables_fit_80_columns_and_wide_or_json_give_full_values() {
    let o = Oprec::migrated();
    let file = kinds_file(&o);
    for _ in 0..2 {
        o.run(&[
            "enqueue",
            "--kinds-file",
            &file,
            "--kind",
            LONG_KIND,
            "--payload",
            "{}",
        ])
        .ok();
    }
    // A malformed class: a permanent failure whose summary names the long value.
    o.enqueue(
        "demo.flaky",
        &format!(r#"{{"fail_times": 1, "class": "{}"}}"#, "x".repeat(120)),
    );
    o.enqueue("demo.noop", "{}");
    o.run(&[
        "--transport",
        "poll",
        "worker",
        "--demo",
        "--kinds-file",
        &file,
        "--exit-when-idle",
    ])
    .ok();
    o.run(&[
        "pause",
        "--kind",
        LONG_KIND,
        "--reason",
        LONG_REASON,
        "--until",
        "2h",
    ])
    .ok();
    o.enqueue("demo.noop", "{}");
    // A live worker for `workers`, with every kind in its row.
    let worker = Background::start(
        &o,
        &[
            "--transport",
            "poll",
            "worker",
            "--demo",
            "--kinds-file",
            &file,
        ],
    );
    let began = std::time::Instant::now();
    while !o.run(&["workers"]).ok().contains(LONG_KIND) {
        assert!(began.elapsed().as_secs() < 30, "no live worker");
        std::thread::sleep(std::time::Duration::from_millis(200));
    }

    let narrow = [("COLUMNS", Some("80"))];
    let commands: [&[&str]; 9] = [
        &["ops", "list"],
        &["ops", "list", "--status", "dead"],
        &["stats"],
        &["controls"],
        &["workers"],
        &["audit"],
        &["redrive", "--kind", LONG_KIND],
        &["redrive", "--kind", "demo.flaky"],
        &["alerts"],
    ];
    for args in commands {
        let text = o.run_with_env(args, &narrow).ok().to_owned();
        fits(&text, 80, &args.join(" "));
    }
    // The long values are cut to fit, with an ellipsis.
    let listed = o
        .run_with_env(&["ops", "list", "--status", "dead"], &narrow)
        .ok()
        .to_owned();
    assert!(listed.contains('…'), "{listed}");
    assert!(!listed.contains(LONG_KIND), "{listed}");
    // Ids stay whole, for the next command.
    let dead = o.run(&["ops", "list", "--status", "dead", "--json"]).json();
    for op in dead.as_array().unwrap() {
        assert!(listed.contains(op["id"].as_str().unwrap()), "{listed}");
    }

    // --wide: the full values, however narrow the terminal.
    let wide = o
        .run_with_env(&["--wide", "ops", "list", "--status", "dead"], &narrow)
        .ok()
        .to_owned();
    assert!(wide.contains(LONG_KIND), "{wide}");
    assert!(
        wide.contains("expected one of: transient, rate_limited"),
        "{wide}"
    );
    let audit = o
        .run_with_env(&["audit", "--wide"], &narrow)
        .ok()
        .to_owned();
    assert!(audit.contains(LONG_REASON), "{audit}");
    // Relative times beside absolute ones.
    assert!(audit.contains(" ago (20"), "{audit}");
    let controls = o
        .run_with_env(&["controls", "--wide"], &narrow)
        .ok()
        .to_owned();
    assert!(controls.contains("in 1h 59m (20"), "{controls}");

    // --json is the same whatever the width, and whole.
    for args in [
        &["ops", "list", "--json"][..],
        &["stats", "--json"],
        &["controls", "--json"],
        &["audit", "--json"],
        &["redrive", "--kind", "demo.flaky", "--json"],
    ] {
        let narrow_json = o.run_with_env(args, &narrow).json();
        let plain = o.run_with_env(args, &[("COLUMNS", None)]).json();
        let strip = |mut v: serde_json::Value| {
            // Figures read at a different instant.
            if let Some(m) = v.as_object_mut() {
                m.remove("at");
            }
            v
        };
        assert_eq!(strip(narrow_json), strip(plain), "{args:?}");
    }
    worker.stop();

    // One last_error shape: the record's (an object with a summary), in the listing, in the
    // re-drive's samples and distinct errors, and in `ops show` (`reconcile list` is checked in
    // operator_postgres.rs; `oprec alerts` calls a failed send's reason `send_error`).
    let listed = o.run(&["ops", "list", "--status", "dead", "--json"]).json();
    let flaky = listed
        .as_array()
        .unwrap()
        .iter()
        .find(|op| op["kind"] == "demo.flaky")
        .expect("the dead demo.flaky")
        .clone();
    let summary = flaky["last_error"]["summary"].as_str().unwrap().to_owned();
    assert!(summary.contains(&"x".repeat(60)), "{flaky}");
    let dry = o.run(&["redrive", "--kind", "demo.flaky", "--json"]).json();
    assert_eq!(dry["samples"][0]["last_error"]["summary"], summary.as_str());
    assert_eq!(dry["errors"][0]["last_error"]["summary"], summary.as_str());
    let shown = o
        .run(&["ops", "show", flaky["id"].as_str().unwrap(), "--json"])
        .json();
    assert_eq!(
        shown["operation"]["last_error"]["summary"],
        summary.as_str(),
        "{shown}"
    );
}
