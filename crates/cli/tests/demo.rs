//! `oprec demo`: each retry scenario ends as it must (dead, succeeded, reconciling), with the
//! ladder's times.

mod common;

use serde_json::Value;

fn scenario<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["scenarios"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == name)
        .unwrap_or_else(|| panic!("no scenario {name}"))
}

fn times(s: &Value) -> Vec<i64> {
    s["attempts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["at_s"].as_i64().unwrap())
        .collect()
}

#[test]
fn demo_json_shows_every_scenario_ending_as_it_must() {
    let o = common::Oprec::new();
    // An explicit database, so the test can look at the rows afterwards.
    let report = o.run(&["--database-url", &o.url, "demo", "--json"]).json();
    assert_eq!(report["transport"], "memory://");
    assert_eq!(
        report["ladder_s"],
        serde_json::json!([0, 60, 300, 1500, 7500, 37500])
    );
    assert!(
        report["scenarios"]
            .as_array()
            .unwrap()
            .iter()
            .all(|s| s["as_expected"] == true)
    );

    let malformed = scenario(&report, "malformed_input");
    assert_eq!(malformed["status"], "dead");
    assert_eq!(malformed["terminal_reason"], "permanent");
    assert_eq!(times(malformed), [0]);
    assert_eq!(malformed["last_error"]["field"], "postal_code");

    let outage = scenario(&report, "transient_outage");
    assert_eq!(outage["status"], "succeeded");
    assert_eq!(times(outage), [0, 60, 360]);
    let remote = outage["remote_id"].as_str().unwrap();
    assert!(remote.starts_with("shp-10115-"), "{remote}");
    let key = outage["effect_key"].as_str().unwrap();
    assert_eq!(key, format!("oprec-{}", outage["id"].as_str().unwrap()));

    let long = scenario(&report, "long_outage");
    assert_eq!(long["status"], "dead");
    assert_eq!(long["terminal_reason"], "attempts_exhausted");
    assert_eq!(times(long), [0, 60, 360, 1860, 9360, 46860]);

    let unknown = scenario(&report, "unknown_result");
    assert_eq!(unknown["status"], "reconciling");
    assert_eq!(times(unknown), [0], "no blind retry");

    let deadline = scenario(&report, "deadline");
    assert_eq!(deadline["status"], "dead");
    assert_eq!(deadline["terminal_reason"], "deadline_passed");
    assert_eq!(times(deadline), [0, 60, 360]);

    let crash = scenario(&report, "crash_loop");
    assert_eq!(crash["status"], "dead");
    assert_eq!(crash["terminal_reason"], "crash_loop");
    let outcomes: Vec<&str> = crash["attempts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["outcome"].as_str().unwrap())
        .collect();
    // The first vanished beside the other scenarios (a suspect, not counted); the next three ran
    // alone and count toward the crash loop (suspect isolation).
    assert_eq!(outcomes, ["vanished", "vanished", "vanished", "vanished"]);
    assert_eq!(times(crash), [0, 31, 62, 93]);

    // The rows say the same, and nothing is left running after the demo's drain.
    let rows = o.run(&["ops", "list", "--json"]).json();
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), 6);
    assert!(
        rows.iter()
            .all(|r| r["status"] != "running" && r["status"] != "pending")
    );
}

#[test]
fn demo_text_runs_with_no_services_in_a_few_seconds() {
    let started = std::time::Instant::now();
    // No --database-url: a temporary SQLite file; the environment's URL is ignored.
    let out = common::bin()
        .arg("demo")
        .env("OPREC_DATABASE_URL", "postgres://u:pw@127.0.0.1:9/nowhere")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        started.elapsed() < std::time::Duration::from_secs(20),
        "took {:?}",
        started.elapsed()
    );
    for needle in [
        "(temporary)",
        "malformed input",
        "(field: postal_code)",
        "=> dead (permanent)",
        "attempt 2  at     +60s",
        "attempt 3  at   +6m00s  succeeded",
        "=> succeeded, remote id shp-10115-",
        "effect key oprec-",
        "attempt 4  at  +31m00s",
        "attempt 5  at   +2h36m",
        "attempt 6  at  +13h01m",
        "=> dead (attempts_exhausted)",
        "=> reconciling; next action: reconcile",
        "=> dead (deadline_passed)",
        "vanished",
        "=> dead (crash_loop)",
        "6 of 6 scenarios ended as they must",
    ] {
        assert!(
            text.contains(needle),
            "demo output lacks {needle:?}:\n{text}"
        );
    }
}
