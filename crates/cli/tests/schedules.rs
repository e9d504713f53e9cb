//! Recurring kinds through the binary: three `oprec worker --kinds-file` processes, on PostgreSQL
//! and on SQLite, with an every-second schedule make one operation per second, none twice and none missing,
//! whichever of them leads; `oprec schedules` shows it (text and JSON); a kinds file with a bad
//! expression, zone or missed rule, or a schedule's setting without a schedule, is refused with
//! the line and the field, and nothing is enqueued.

mod common;
mod rig;

use std::time::Duration;

use common::Oprec;
use rig::{Rig, RigKind};

const KINDS: &str = r#"[[kind]]
name = "report.pulse"
dependency = "reports"
timeout = "5s"
max_attempts = 2
ladder = ["0s", "1s"]
jitter = "none"
schedule = "* * * * * *"
timezone = "Europe/Paris"
missed = "skip"
grace = "5s"
schedule_payload = { report = "pulse" }

[kind.http]
url = "http://127.0.0.1:9/report"
"#;

#[test]
fn three_workers_make_one_operation_per_tick_and_schedules_shows_it_postgres() {
    three_workers_make_one_operation_per_tick_and_schedules_shows_it(RigKind::PostgresPoll);
}

#[test]
fn three_workers_make_one_operation_per_tick_and_schedules_shows_it_sqlite() {
    three_workers_make_one_operation_per_tick_and_schedules_shows_it(RigKind::SqlitePoll);
}

fn three_workers_make_one_operation_per_tick_and_schedules_shows_it(kind: RigKind) {
    let rig = Rig::new(kind, "schedules");
    std::fs::write(rig.dir().join("kinds.toml"), KINDS).unwrap();
    let mut workers: Vec<_> = (0..3)
        .map(|i| {
            rig.spawn(
                &format!("sched{i}"),
                &["worker", "--kinds-file", "kinds.toml"],
            )
        })
        .collect();
    for w in &mut workers {
        w.wait_until_up();
    }
    std::thread::sleep(Duration::from_secs(5));
    for w in &workers {
        w.sigterm();
    }
    for w in &mut workers {
        assert!(
            w.wait_for_exit(Duration::from_secs(20)).is_some(),
            "{} did not stop",
            w.name
        );
    }
    let keys = rig.counts(
        "SELECT idempotency_key, count(*) FROM operations WHERE kind = 'report.pulse' GROUP BY 1 ORDER BY 1",
    );
    assert!(keys.len() >= 3, "{keys:?}\n{}", rig.dump());
    assert!(keys.iter().all(|(_, n)| *n == 1), "{keys:?}");
    let seconds: Vec<i64> = keys
        .iter()
        .map(|(k, _)| {
            chrono::DateTime::parse_from_rfc3339(k.strip_prefix("schedule:").unwrap())
                .unwrap()
                .timestamp()
        })
        .collect();
    assert!(
        seconds.windows(2).all(|w| w[1] - w[0] == 1),
        "one per second, no gap: {keys:?}"
    );
    let payload = rig.counts(
        "SELECT CAST(payload AS TEXT), CAST(1 AS BIGINT) FROM operations WHERE kind = 'report.pulse' ORDER BY id LIMIT 1",
    );
    let payload: serde_json::Value = serde_json::from_str(&payload[0].0).unwrap();
    assert_eq!(payload["report"], "pulse", "{payload}");
    assert!(
        payload["tick"]
            .as_str()
            .is_some_and(|t| t.starts_with("20")),
        "{payload}"
    );

    let json = rig.oprec_json(&["schedules", "--json"]);
    let rows = json["schedules"].as_array().unwrap();
    assert_eq!(rows.len(), 1, "{json}");
    let row = &rows[0];
    assert_eq!(row["kind"], "report.pulse");
    assert_eq!(row["expression"], "* * * * * *");
    assert_eq!(row["timezone"], "Europe/Paris");
    assert_eq!(row["missed"], "skip");
    assert_eq!(row["grace_secs"], 5);
    let last_key = &keys.last().unwrap().0;
    assert_eq!(
        row["last_enqueued_tick"]
            .as_str()
            .map(|t| { chrono::DateTime::parse_from_rfc3339(t).unwrap().timestamp() }),
        Some(*seconds.last().unwrap()),
        "{row} vs {last_key}"
    );
    assert!(row["last_operation_id"].is_string(), "{row}");
    assert!(row["last_operation_status"].is_string(), "{row}");
    // The workers stopped: no live worker runs the kind.
    assert_eq!(row["state"], "no_worker");

    let text = rig.oprec_ok(&["schedules"]);
    for needle in [
        "KIND",
        "NEXT TICK",
        "LAST OPERATION",
        "report.pulse",
        "* * * * * *",
        "Europe/Paris",
        "skip",
        row["last_operation_id"].as_str().unwrap(),
        "no live worker runs the kind",
    ] {
        assert!(text.contains(needle), "{needle:?} missing:\n{text}");
    }
}

#[test]
fn no_schedules_is_said_plainly() {
    let o = Oprec::migrated();
    let out = o.run(&["schedules"]);
    assert!(out.ok().contains("no schedules"), "{out:?}");
    let json = o.run(&["schedules", "--json"]).json();
    assert_eq!(json["schedules"], serde_json::json!([]));
}

/// `oprec worker --kinds-file` on KINDS with line `n` replaced: exit 2, one line naming the
/// place and saying `says`; nothing enqueued, no schedule declared.
fn refused(n: usize, line: &str, at: &str, says: &str) {
    let o = Oprec::migrated();
    let mut lines: Vec<&str> = KINDS.lines().collect();
    lines[n - 1] = line;
    std::fs::write(o.path("kinds.toml"), lines.join("\n") + "\n").unwrap();
    let run = o.run(&[
        "--transport",
        "poll",
        "worker",
        "--kinds-file",
        "kinds.toml",
    ]);
    run.bad_input(&format!("kinds.toml:{at}: kind \"report.pulse\": "));
    run.bad_input(says);
    let json = o.run(&["schedules", "--json"]).json();
    assert_eq!(json["schedules"], serde_json::json!([]), "{json}");
    let ops = o.run(&["ops", "list", "--json"]).json();
    assert_eq!(ops.as_array().map(Vec::len).unwrap_or(0), 0, "{ops}");
}

#[test]
fn bad_schedules_are_refused_naming_the_field() {
    refused(
        8,
        r#"schedule = "61 * * * *""#,
        "8:12",
        "schedule: schedule \"61 * * * *\" is not a cron expression",
    );
    refused(8, r#"schedule = "* * *""#, "8:12", "has 3 fields");
    refused(
        9,
        r#"timezone = "Europe/Pariss""#,
        "9:12",
        "timezone: time zone \"Europe/Pariss\" is not an IANA zone name",
    );
    refused(
        10,
        r#"missed = "later""#,
        "10:10",
        "missed is \"later\"; use \"run_once\"",
    );
    refused(
        8,
        r#"# no schedule"#,
        "9:12",
        "timezone is a schedule's setting, and the kind declares no schedule",
    );
}
