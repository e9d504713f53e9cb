//! Bad input exits 2 with one clear line on stderr, never a panic; a missing schema exits 1 and
//! says to run `oprec migrate`.

mod common;

use common::Oprec;

fn enqueue(o: &Oprec, extra: &[&str]) -> common::Run {
    o.run(&[&["enqueue", "--kind", "demo.noop"][..], extra].concat())
}

#[test]
fn malformed_json_payload() {
    let o = Oprec::migrated();
    enqueue(&o, &["--payload", "{\"a\":"]).bad_input("--payload is not valid JSON");
}

/// An integer JSON would round (wider than 64 bits) is refused with the remedy; 64-bit ones and
/// the same digits in a string pass.
#[test]
fn an_integer_wider_than_64_bits() {
    let o = Oprec::migrated();
    enqueue(
        &o,
        &["--payload", r#"{"order": 123456789012345678901234567890}"#],
    )
    .bad_input("wider than 64 bits");
    let run = enqueue(
        &o,
        &["--payload", r#"{"order": 123456789012345678901234567890}"#],
    );
    assert!(run.stderr.contains("send it as a string"), "{}", run.stderr);
    enqueue(&o, &["--payload", r#"{"order": 18446744073709551615}"#]).ok();
    enqueue(
        &o,
        &[
            "--payload",
            r#"{"order": "123456789012345678901234567890"}"#,
        ],
    )
    .ok();
    assert_eq!(
        o.run(&["ops", "list", "--json"])
            .json()
            .as_array()
            .map(Vec::len),
        Some(2),
        "the refused one wrote nothing"
    );
}

/// An idempotency key names one effect: the same key with the same payload gives the existing
/// operation back; with another payload it is a conflict naming the operation, and nothing is
/// enqueued.
#[test]
fn the_same_key_with_another_payload_is_a_conflict() {
    let o = Oprec::migrated();
    let first = enqueue(
        &o,
        &["--payload", r#"{"a": 1}"#, "--key", "order-7", "--json"],
    )
    .json();
    let id = first["id"].as_str().expect("id");
    let again = enqueue(
        &o,
        &["--payload", r#"{ "a" : 1 }"#, "--key", "order-7", "--json"],
    )
    .json();
    assert_eq!(
        (again["id"].as_str(), again["created"].as_bool()),
        (Some(id), Some(false))
    );
    let conflict = enqueue(&o, &["--payload", r#"{"a": 2}"#, "--key", "order-7"]);
    conflict.bad_input("is taken by operation");
    assert!(conflict.stderr.contains(id), "{}", conflict.stderr);
    assert!(
        conflict.stderr.contains("different payload"),
        "{}",
        conflict.stderr
    );
    // With --count, each copy's key is checked the same way.
    enqueue(
        &o,
        &["--payload", r#"{"b": 1}"#, "--key", "batch", "--count", "2"],
    )
    .ok();
    enqueue(
        &o,
        &["--payload", r#"{"b": 2}"#, "--key", "batch", "--count", "2"],
    )
    .bad_input("is taken by operation");
    assert_eq!(
        o.run(&["ops", "list", "--json"])
            .json()
            .as_array()
            .map(Vec::len),
        Some(3)
    );
}

/// Pausing a kind nothing has (a typo) warns and names the kinds that exist; the pause stands.
#[test]
fn pausing_an_unknown_kind_warns() {
    let o = Oprec::migrated();
    enqueue(&o, &["--payload", "{}"]).ok();
    let run = o.run(&["pause", "--kind", "demo.nop", "--json"]);
    let out = run.json();
    assert!(
        run.stderr
            .contains("warning: no operation of kind demo.nop exists")
            && run.stderr.contains("demo.noop"),
        "{}",
        run.stderr
    );
    assert!(
        out["warning"]
            .as_str()
            .is_some_and(|w| w.contains("a typo?")),
        "{out}"
    );
    assert_eq!(out["control"]["value"], "demo.nop", "the pause stands");
    let known = o.run(&["pause", "--kind", "demo.noop", "--json"]);
    assert_eq!(known.json()["warning"], serde_json::Value::Null);
    assert!(!known.stderr.contains("warning"), "{}", known.stderr);
}

#[test]
fn bad_durations() {
    let o = Oprec::migrated();
    enqueue(&o, &["--payload", "{}", "--delay", "5 parsecs"]).bad_input("--delay");
    enqueue(&o, &["--payload", "{}", "--deadline", "next tuesday"]).bad_input("--deadline");
    o.run(&["worker", "--demo", "--lease", "soon"])
        .bad_input("--lease");
}

#[test]
fn a_deadline_in_the_past_is_refused() {
    let o = Oprec::migrated();
    enqueue(
        &o,
        &["--payload", "{}", "--deadline", "2001-01-01T00:00:00Z"],
    )
    .bad_input("not in the future");
}

#[test]
fn bad_ids() {
    let o = Oprec::migrated();
    o.run(&["ops", "show", "42"])
        .bad_input("not an operation id");
    o.run(&["ops", "list", "--after", "yesterday"])
        .bad_input("not an operation id");
}

#[test]
fn unknown_kind_lists_the_known_ones() {
    let o = Oprec::migrated();
    o.run(&["enqueue", "--kind", "email.send", "--payload", "{}"])
        .bad_input("unknown kind \"email.send\"; accepted kinds: demo.crash, demo.effect, demo.flaky, demo.noop, demo.slow (--kinds-file FILE adds the kinds a file declares)");
}

#[test]
fn unknown_status_and_class() {
    let o = Oprec::migrated();
    o.run(&["ops", "list", "--status", "done"])
        .bad_input("unknown status \"done\"; expected one of: pending");
    o.run(&["ops", "list", "--class", "flaky"])
        .bad_input("unknown failure class \"flaky\"");
    o.run(&["ops", "list", "--limit", "0"]).bad_input("--limit");
}

#[test]
fn oversized_payload_from_a_file() {
    let o = Oprec::migrated();
    let file = o.path("big.json");
    let big = format!("{{\"blob\": \"{}\"}}", "x".repeat(300 * 1024));
    std::fs::write(&file, big).unwrap();
    enqueue(&o, &["--payload-file", file.to_str().unwrap()])
        .bad_input("over the limit of 262144 bytes");
    let missing = o.path("missing.json");
    enqueue(&o, &["--payload-file", missing.to_str().unwrap()]).bad_input("cannot read");
    let listed = o.run(&["ops", "list", "--json"]).json();
    assert_eq!(listed.as_array().unwrap().len(), 0, "nothing was stored");
}

#[test]
fn count_zero() {
    let o = Oprec::migrated();
    enqueue(&o, &["--payload", "{}", "--count", "0"]).bad_input("--count must be at least 1");
}

#[test]
fn purge_needs_a_broker() {
    let o = Oprec::migrated();
    // A broker URL nobody listens on: refused before anything connects.
    let run = o.run(&[
        "--transport",
        "redis://app:hunter2secret@127.0.0.1:9/0",
        "transport",
        "purge",
    ]);
    // Without --yes it is a dry run, which reads the broker's depth: one nobody listens on is a
    // runtime failure (exit 1), reported without the password.
    assert_eq!(run.code, Some(1), "{run:#?}");
    assert!(run.stderr.contains("reading the depth"), "{}", run.stderr);
    assert!(!run.stderr.contains("hunter2secret"), "{}", run.stderr);
    o.run(&["transport", "purge", "--yes"])
        .bad_input("no broker to purge");
    o.run(&["--transport", "poll", "transport", "depth"])
        .bad_input("no broker");
    o.run(&["--transport", "memory://", "transport", "purge", "--yes"])
        .bad_input("inside one process");
}

/// A mistyped transport parameter is refused before anything connects, naming the likely one
/// meant; it never falls back to the shared default stream (a purge would empty someone else's).
#[test]
fn a_mistyped_transport_parameter_is_refused() {
    let o = Oprec::migrated();
    let run = o.run(&[
        "--transport",
        "redis://:hunter2secret@127.0.0.1:9/0?strem=billing",
        "transport",
        "purge",
        "--yes",
    ]);
    run.bad_input("unknown parameter strem= (did you mean stream=?)");
    assert!(!run.stderr.contains("hunter2secret"), "{}", run.stderr);
    o.run(&[
        "--transport",
        "amqp://guest:guest@127.0.0.1:9/%2f?prefix=billing&queue_tpye=quorum",
        "transport",
        "depth",
    ])
    .bad_input("unknown parameter queue_tpye= (did you mean queue_type=?)");
    let help = o.run(&["--help"]).ok().to_owned();
    assert!(help.contains("anything else is refused"), "{help}");
}

/// A PostgreSQL that refuses connections is reported as refused, at once (not as "no answer"
/// after the connect timeout), with the password hidden.
#[test]
fn a_refused_database_is_reported_as_refused() {
    let o = Oprec::new();
    let started = std::time::Instant::now();
    let run = o.run(&[
        "--database-url",
        "postgres://app:hunter2secret@127.0.0.1:9/nowhere",
        "stats",
    ]);
    assert_eq!(run.code, Some(1), "{run:?}");
    assert!(run.stderr.contains("Connection refused"), "{}", run.stderr);
    assert!(!run.stderr.contains("hunter2secret"), "{}", run.stderr);
    // The connect timeout is 10 s; a refusal is reported within a second (it comes back in
    // milliseconds: the rest is the process starting).
    assert!(
        started.elapsed() < std::time::Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn worker_without_kinds() {
    let o = Oprec::migrated();
    o.run(&["worker"]).bad_input("nothing to run; pass --demo");
    o.run(&["worker", "--demo", "--demo-ladder", "0,x"])
        .bad_input("--demo-ladder");
    o.run(&["worker", "--demo", "--concurrency", "0"])
        .bad_input("--concurrency");
}

#[test]
fn a_lease_out_of_range_is_refused_naming_the_bounds() {
    let o = Oprec::migrated();
    for lease in ["1ms", "999ms", "25h", "100000000000h"] {
        o.run(&["worker", "--demo", "--lease", lease, "--exit-when-idle"])
            .bad_input("--lease must be between 1s and 24h");
    }
}

#[test]
fn a_ladder_that_retries_at_once_is_refused() {
    let o = Oprec::migrated();
    for (ladder, rung) in [("0,0,0", "attempt 2"), ("0,60,0", "attempt 3")] {
        o.run(&[
            "worker",
            "--demo",
            "--demo-ladder",
            ladder,
            "--exit-when-idle",
        ])
        .bad_input(&format!(
            "positive delay before every retry: the schedule retries at once before {rung}"
        ));
    }
}

#[test]
fn unsupported_database_url() {
    let o = Oprec::new();
    let run = o.run(&[
        "--database-url",
        "mysql://root:pa55word@db/x",
        "ops",
        "list",
    ]);
    run.bad_input("unsupported database URL mysql://root:***@db/x");
    assert!(!run.stderr.contains("pa55word"));
}

/// The common ways to mistype a URL are refused (or explained) without printing the password:
/// one slash after the scheme, a libpq key=value string, an unencoded `/` or `#` in the password,
/// and a driver's complaint names the URL it is about.
#[test]
fn url_mistakes_never_print_the_password() {
    let o = Oprec::new();
    let secret = "pa55word";
    let cases: [(&[&str], Option<i32>, &str); 9] = [
        (
            &[
                "--database-url",
                "postgres:/app:pa55word@127.0.0.1/test",
                "stats",
            ],
            Some(2),
            "write postgres://",
        ),
        (
            &[
                "--transport",
                "amqp:/guest:pa55word@127.0.0.1",
                "transport",
                "depth",
            ],
            Some(2),
            "write amqp://",
        ),
        (
            &[
                "--database-url",
                "host=127.0.0.1 user=app password=pa55word",
                "stats",
            ],
            Some(2),
            "libpq key=value connection string",
        ),
        (
            &[
                "--transport",
                "amqp://guest:pa55#word@127.0.0.1:5672/%2f",
                "transport",
                "depth",
            ],
            Some(2),
            "must percent-encode",
        ),
        (
            &[
                "--database-url",
                "postgres://app:pa55/word@127.0.0.1:1/test",
                "stats",
            ],
            Some(2),
            "must percent-encode",
        ),
        (
            &[
                "--transport",
                "redis://:pa55word@127.0.0.1:6379/abc",
                "transport",
                "depth",
            ],
            Some(2),
            "the transport URL redis://:***@127.0.0.1:6379/abc",
        ),
        (
            &[
                "--database-url",
                "postgres://app:pa55?word@127.0.0.1:1/test",
                "stats",
            ],
            Some(2),
            "must percent-encode",
        ),
        // A legacy source is read by the drivers themselves: its shape is checked first.
        (
            &[
                "import",
                "--from",
                "amqp:/guest:pa55word@127.0.0.1:5672/%2f",
                "--queue",
                "legacy",
                "--kind",
                "demo.noop",
            ],
            Some(2),
            "--from: amqp:/",
        ),
        (
            &[
                "import",
                "--from",
                "redis:/:pa55word@127.0.0.1:6379/0",
                "--list",
                "legacy",
                "--kind",
                "demo.noop",
            ],
            Some(2),
            "write redis://",
        ),
    ];
    for (args, code, needle) in cases {
        let run = o.run(args);
        assert_eq!(run.code, code, "{args:?}: {run:#?}");
        assert!(run.stderr.contains(needle), "{args:?}: {}", run.stderr);
        assert!(
            !run.stderr.contains(secret) && !run.stdout.contains(secret),
            "{args:?}: {}",
            run.stderr
        );
    }
}

#[test]
fn a_missing_schema_says_to_migrate() {
    let o = Oprec::new();
    for args in [
        &["ops", "list"][..],
        &["enqueue", "--kind", "demo.noop", "--payload", "{}"][..],
        &["worker", "--demo", "--exit-when-idle"][..],
    ] {
        let run = o.run(args);
        assert_eq!(run.code, Some(1), "{args:?}: {run:#?}");
        assert!(
            run.stderr.contains("run `oprec migrate` first"),
            "{}",
            run.stderr
        );
        assert_eq!(run.stderr.trim_end().lines().count(), 1, "{}", run.stderr);
    }
}

#[test]
fn not_found_is_a_failure_not_bad_input() {
    let o = Oprec::migrated();
    let run = o.run(&["ops", "show", "01a22b29-1362-75a7-b7fc-103e65295087"]);
    assert_eq!(run.code, Some(1), "{run:#?}");
    assert!(run.stderr.contains("not found"));
}

#[test]
fn clap_usage_errors_exit_2() {
    let o = Oprec::migrated();
    assert_eq!(o.run(&["enqueue", "--kind", "demo.noop"]).code, Some(2));
    assert_eq!(o.run(&["frobnicate"]).code, Some(2));
    assert_eq!(
        o.run(&["worker", "--demo-ladder", "0,1"]).code,
        Some(2),
        "--demo-* needs --demo"
    );
}

/// `--priority` takes -2 to 2 (negatives included) and keeps it with the operation; anything
/// else exits 2 naming the range, and nothing is enqueued.
#[test]
fn a_priority_outside_its_range() {
    let o = Oprec::migrated();
    for (value, needle) in [("3", "3 is not in -2..=2"), ("high", "invalid digit")] {
        let run = enqueue(&o, &["--priority", value]);
        assert_eq!(run.code, Some(2), "{run:#?}");
        assert!(
            run.stderr.contains("--priority") && run.stderr.contains(needle),
            "{}",
            run.stderr
        );
    }
    assert_eq!(
        o.run(&["ops", "list", "--json"])
            .json()
            .as_array()
            .map(Vec::len),
        Some(0),
        "the refused ones wrote nothing"
    );
    let id = enqueue(&o, &["--payload", "{}", "--priority", "-2", "--json"]).json()["id"]
        .as_str()
        .expect("id")
        .to_owned();
    assert_eq!(o.show(&id)["operation"]["enqueue_params"]["priority"], -2);
}
