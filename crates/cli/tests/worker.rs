//! `oprec worker --demo` from outside the process, on SQLite, poll-only: enqueued demo operations
//! run to their end, a crashed attempt is rescued, effects are counted, and `--exit-when-idle`
//! stops the worker.

mod common;

use common::Oprec;

/// Runs a worker until idle, with a short ladder, and returns its summary line.
fn work(o: &Oprec, extra: &[&str]) -> String {
    let args = [
        &[
            "--transport",
            "poll",
            "worker",
            "--demo",
            "--demo-ladder",
            "0,1,1",
            "--exit-when-idle",
        ][..],
        extra,
    ]
    .concat();
    let run = o.run(&args);
    let out = run.ok().to_owned();
    assert!(out.contains("worker stopped (idle)"), "{run:#?}");
    out
}

/// The code version a worker records is the application's, as it is told it (`--code-version`,
/// or `OPREC_CODE_VERSION`), and none when it is told none: never oprec's own version.
#[test]
fn the_code_version_recorded_is_the_applications() {
    let o = Oprec::migrated();
    let untold = o.enqueue("demo.noop", "{}");
    work(&o, &[]);
    let by_env = o.enqueue("demo.noop", "{}");
    let run = o
        .command(&[
            "--transport",
            "poll",
            "worker",
            "--demo",
            "--exit-when-idle",
        ])
        .env("OPREC_CODE_VERSION", "app-7")
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run oprec");
    assert!(run.status.success(), "{run:?}");
    let by_flag = o.enqueue("demo.noop", "{}");
    work(&o, &["--code-version", "app-8"]);
    for (id, want) in [
        (&untold, serde_json::Value::Null),
        (&by_env, "app-7".into()),
        (&by_flag, "app-8".into()),
    ] {
        let d = o.show(id);
        assert_eq!(d["attempts"][0]["code_version"], want, "{d:#}");
        assert_eq!(d["operation"]["code_version"], want, "{d:#}");
    }
}

fn status(o: &Oprec, id: &str) -> (String, Vec<String>) {
    let d = o.show(id);
    let outcomes = d["attempts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["outcome"].as_str().unwrap().to_owned())
        .collect();
    (
        d["operation"]["status"].as_str().unwrap().to_owned(),
        outcomes,
    )
}

#[test]
fn noop_and_flaky_run_to_success() {
    let o = Oprec::migrated();
    o.run(&[
        "enqueue",
        "--kind",
        "demo.noop",
        "--payload",
        "{}",
        "--count",
        "25",
    ])
    .ok();
    let flaky = o.enqueue("demo.flaky", r#"{"fail_times": 2, "class": "transient"}"#);
    let limited = o.enqueue(
        "demo.flaky",
        r#"{"fail_times": 1, "class": "rate_limited", "retry_after_s": 1}"#,
    );
    let summary = work(&o, &[]);
    assert!(summary.contains("succeeded 27"), "{summary}");

    let ok = o
        .run(&["ops", "list", "--status", "succeeded", "--json"])
        .json();
    assert_eq!(ok.as_array().unwrap().len(), 27);
    assert_eq!(
        status(&o, &flaky),
        (
            "succeeded".into(),
            vec!["error".into(), "error".into(), "succeeded".into()]
        )
    );
    let d = o.show(&flaky);
    assert_eq!(d["attempts"][0]["failure_class"], "transient");
    assert_eq!(status(&o, &limited).1, ["error", "succeeded"]);
    assert_eq!(
        o.show(&limited)["attempts"][0]["failure_class"],
        "rate_limited"
    );
}

#[test]
fn flaky_classes_end_where_the_design_says() {
    let o = Oprec::migrated();
    let malformed = o.enqueue("demo.flaky", r#"{"fail_times": 1, "class": "sometimes"}"#);
    let unknown = o.enqueue("demo.flaky", r#"{"fail_times": 1, "class": "unknown"}"#);
    let config = o.enqueue(
        "demo.flaky",
        r#"{"fail_times": 1, "class": "configuration"}"#,
    );
    let exhausted = o.enqueue("demo.flaky", r#"{"fail_times": 9}"#);
    let ended_outage = o.enqueue("demo.flaky", r#"{"fail_until": "2001-01-01T00:00:00Z"}"#);
    work(&o, &[]);

    let d = o.show(&malformed);
    assert_eq!(d["operation"]["status"], "dead");
    assert_eq!(d["operation"]["terminal_reason"], "permanent");
    assert_eq!(d["operation"]["last_error"]["field"], "class");
    assert_eq!(status(&o, &unknown).0, "reconciling");
    assert_eq!(status(&o, &config).0, "held");
    let d = o.show(&exhausted);
    assert_eq!(d["operation"]["terminal_reason"], "attempts_exhausted");
    assert_eq!(
        d["attempts"].as_array().unwrap().len(),
        3,
        "the ladder 0,1,1 bounds attempts"
    );
    assert_eq!(
        status(&o, &ended_outage),
        ("succeeded".into(), vec!["succeeded".into()])
    );

    let text = o
        .run(&["ops", "list", "--class", "configuration"])
        .ok()
        .to_owned();
    assert!(text.contains(&config) && !text.contains(&unknown), "{text}");
}

#[test]
fn a_crashed_attempt_is_rescued_and_retried() {
    let o = Oprec::migrated();
    let id = o.enqueue("demo.crash", r#"{"crash_times": 1}"#);
    let crashed = o.run(&["worker", "--demo", "--lease", "1s", "--exit-when-idle"]);
    assert_ne!(
        crashed.code,
        Some(0),
        "the first attempt aborts the process: {crashed:#?}"
    );
    assert!(
        crashed.stderr.contains("demo.crash: aborting"),
        "{}",
        crashed.stderr
    );
    assert_eq!(status(&o, &id).0, "running", "no outcome was written");

    work(&o, &["--lease", "1s"]);
    assert_eq!(
        status(&o, &id),
        (
            "succeeded".into(),
            vec!["vanished".into(), "succeeded".into()]
        )
    );
}

#[test]
fn effects_are_counted_per_effect_key() {
    let o = Oprec::migrated();
    o.run(&[
        "enqueue",
        "--kind",
        "demo.effect",
        "--payload",
        "{}",
        "--count",
        "5",
    ])
    .ok();
    work(&o, &[]);
    let ops = o.run(&["ops", "list", "--json"]).json();
    let ops = ops.as_array().unwrap();
    assert_eq!(ops.len(), 5);
    for op in ops {
        assert_eq!(op["status"], "succeeded");
        let id = op["id"].as_str().unwrap();
        assert_eq!(
            op["remote_id"],
            format!("oprec-{id}"),
            "the effect key is the remote id"
        );
    }
}

#[test]
fn exit_when_idle_with_nothing_to_do() {
    let o = Oprec::migrated();
    let started = std::time::Instant::now();
    let summary = work(&o, &[]);
    assert!(summary.contains("claimed 0"), "{summary}");
    assert!(started.elapsed() < std::time::Duration::from_secs(15));
}
