//! `--log-format json` (and `OPREC_LOG_FORMAT=json`): a worker's stderr is JSON objects, one per
//! line, with timestamp, level, target and fields, and the spans a line was logged in; the
//! default stays text, and an unknown format exits 2.

mod common;

use common::Oprec;
use serde_json::Value;

const TP: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

/// Every line of `stderr` as a JSON object with a level, a target and fields.
fn json_lines(stderr: &str) -> Vec<Value> {
    let lines: Vec<Value> = stderr
        .lines()
        .map(|l| {
            let v: Value =
                serde_json::from_str(l).unwrap_or_else(|e| panic!("not a JSON line ({e}): {l}"));
            assert!(v.is_object(), "{l}");
            for key in ["timestamp", "level", "target", "fields"] {
                assert!(v.get(key).is_some(), "no {key}: {l}");
            }
            v
        })
        .collect();
    assert!(!lines.is_empty(), "no log lines");
    lines
}

#[test]
fn a_worker_logs_one_json_object_per_line_with_log_format_json() {
    let o = Oprec::migrated();
    o.run(&[
        "enqueue",
        "--kind",
        "demo.flaky",
        "--payload",
        r#"{"fail_times": 1, "class": "transient"}"#,
        "--traceparent",
        TP,
    ])
    .ok();
    let args = [
        "--transport",
        "poll",
        "worker",
        "--demo",
        "--exit-when-idle",
        "-vv",
    ];
    let mut flagged = vec!["--log-format", "json"];
    flagged.extend(args);
    let run = o.run(&flagged);
    run.ok();
    let lines = json_lines(&run.stderr);
    // Events inside oprec's spans carry them: the store call of a completion batch.
    let spans: Vec<&Value> = lines
        .iter()
        .filter_map(|l| l["spans"].as_array())
        .flatten()
        .collect();
    assert!(
        spans.iter().any(|s| s["name"] == "oprec.complete"),
        "no line inside an oprec.complete span: {}",
        run.stderr
    );
    assert!(
        lines
            .iter()
            .any(|l| l["level"] == "DEBUG" || l["level"] == "INFO"),
        "{}",
        run.stderr
    );

    // The same from the environment; the default stays text.
    o.enqueue("demo.noop", "{}");
    let run = o.run_with_env(&args, &[("OPREC_LOG_FORMAT", Some("json"))]);
    run.ok();
    json_lines(&run.stderr);
    o.enqueue("demo.noop", "{}");
    let run = o.run(&args);
    run.ok();
    assert!(
        run.stderr
            .lines()
            .any(|l| serde_json::from_str::<Value>(l).is_err()),
        "text by default: {}",
        run.stderr
    );
    let run = o.run(&["--log-format", "yaml", "stats"]);
    assert_eq!(run.code, Some(2), "{run:#?}");
    assert!(
        run.stderr.contains("'yaml'") && run.stderr.contains("json"),
        "{}",
        run.stderr
    );
}
