//! Loading kinds files: a sound file gives kinds with the policies it declares, and every
//! refusal names the file, the line and the column of what is wrong, without quoting a secret.

use chrono::Duration;
use oprec_http_kinds::{Error, KindsFile};

/// A sound kind, line by line, to break one line at a time.
const GOOD: &str = r#"[[kind]]
name = "shipment.create"
dependency = "shipping-provider"
timeout = "10s"
max_attempts = 4
give_up_after = "48h"
ladder = ["0s", "1m", "5m", 1500]
jitter = "equal"

[kind.http]
url = "http://127.0.0.1:9/ship"
headers = { Authorization = "env:SHIPPER_TOKEN" }
"#;

fn env(name: &str) -> Option<String> {
    match name {
        "SHIPPER_TOKEN" => Some("Bearer t0ken-from-env".into()),
        "SHIPPER_API_VERSION" => Some("2026-01".into()),
        "MAILER_KEY" => Some("mk-1".into()),
        _ => None,
    }
}

/// `GOOD` with line `n` (1-based) replaced by `line`.
fn with_line(n: usize, line: &str) -> String {
    let mut lines: Vec<&str> = GOOD.lines().collect();
    lines[n - 1] = line;
    lines.join("\n") + "\n"
}

/// The error of loading `text` as `kinds.toml`, checking it is at `line`, and its message.
fn refused_at(text: &str, line: usize) -> String {
    let e = KindsFile::parse("kinds.toml", text)
        .and_then(|f| f.kinds(&env).map(|_| f))
        .expect_err("refused");
    match &e {
        Error::Invalid { at, .. } => {
            assert_eq!(at.file, "kinds.toml", "{e}");
            assert_eq!(at.line, line, "{e}");
        }
        other => panic!("not an Invalid error: {other}"),
    }
    let text = e.to_string();
    assert!(text.starts_with(&format!("kinds.toml:{line}:")), "{text}");
    assert_eq!(text.lines().count(), 1, "{text}");
    text
}

#[test]
fn a_sound_file_gives_its_kinds_with_their_policies() {
    let file = KindsFile::parse("kinds.toml", GOOD).unwrap();
    assert_eq!(file.names(), ["shipment.create"]);
    let kinds = file.kinds(&env).unwrap();
    let k = &kinds[0];
    assert_eq!(k.name(), "shipment.create");
    assert_eq!(k.dependency_name(), Some("shipping-provider"));
    let p = k.policy();
    assert_eq!(p.timeout(), Duration::seconds(10));
    assert_eq!(p.max_attempts(), Some(4));
    assert_eq!(p.give_up_after(), Some(Duration::hours(48)));
    assert!(p.external_io());
    assert_eq!(p.ladder().jitter(), oprec_core::Jitter::Equal);
    assert_eq!(
        p.ladder()
            .delay_before(4, oprec_core::FailureClass::Transient),
        Some(Duration::seconds(1500))
    );
    // No reconcile URL: unknown outcomes wait for an operator.
    assert!(!k.can_reconcile());
    // Nothing secret in any Debug, the handler's (which holds the value) included.
    let handler = file.handler("shipment.create", &env).unwrap().unwrap();
    let shown = format!("{file:?} {kinds:?} {handler:?}");
    assert!(shown.contains("SHIPPER_TOKEN"), "{shown}");
    assert!(!shown.contains("t0ken"), "{shown}");
}

#[test]
fn the_documented_example_loads() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/kinds.toml");
    let file = KindsFile::load(path).unwrap();
    assert_eq!(file.names(), ["shipment.create", "invoice.email"]);
    let kinds = file.kinds(&env).unwrap();
    assert!(kinds[0].can_reconcile());
    assert_eq!(kinds[0].policy().unknown_retries(), 2);
    assert_eq!(kinds[0].policy().rate_limit_max(), Duration::minutes(15));
    assert_eq!(kinds[1].policy().max_attempts(), None);
    assert_eq!(
        kinds[1]
            .policy()
            .ladder()
            .delay_before(2, oprec_core::FailureClass::RateLimited),
        Some(Duration::seconds(5))
    );
}

#[test]
fn a_bad_ladder_is_refused_at_its_line() {
    // A zero wait before a retry: an HTTP kind would hammer its provider.
    let e = refused_at(&with_line(7, r#"ladder = ["0s", "0s", "5m"]"#), 7);
    assert!(e.contains("kinds.toml:7:10:"), "{e}");
    assert!(e.contains("kind \"shipment.create\""), "{e}");
    assert!(
        e.contains(": kind \"shipment.create\": retry policy: a kind that does external I/O needs a positive delay before every retry"),
        "{e}"
    );
    let e = refused_at(&with_line(7, r#"ladder = ["0s", "soon"]"#), 7);
    assert!(e.contains("\"soon\" is not a duration"), "{e}");
    let e = refused_at(&with_line(7, "ladder = []"), 7);
    assert!(e.contains("at least one rung"), "{e}");
    let e = refused_at(
        &with_line(
            7,
            r#"ladder = { base = "1m", factor = 0.5, ceiling = "1h" }"#,
        ),
        7,
    );
    assert!(e.contains("factor ≥ 1"), "{e}");
    let e = refused_at(
        &with_line(7, r#"ladder = { base = "1m", factor = 2, cieling = "1h" }"#),
        7,
    );
    assert!(e.contains("unknown field `cieling`"), "{e}");
    let e = refused_at(&with_line(7, "ladder = -5"), 7);
    assert!(e.contains("expected a ladder"), "{e}");
    let e = refused_at(&with_line(7, "ladder = [0, -5]"), 7);
    assert!(e.contains("kinds.toml:7:14: -5 is negative"), "{e}");
}

#[test]
fn an_unknown_field_is_refused_at_its_line() {
    // A misspelt bound must not leave the kind unbounded.
    let e = refused_at(&with_line(5, "max_atempts = 4"), 5);
    assert!(e.contains("unknown field `max_atempts`"), "{e}");
    let e = refused_at(&with_line(11, r#"uri = "http://127.0.0.1:9/ship""#), 11);
    assert!(
        e.contains("unknown field `uri`, expected one of `url`"),
        "{e}"
    );
    let e = refused_at(&(GOOD.to_owned() + "\n[workers]\nn = 1\n"), 14);
    assert!(e.contains("unknown field `workers`"), "{e}");
}

#[test]
fn a_missing_environment_variable_is_refused_at_its_line() {
    let text = with_line(12, r#"headers = { Authorization = "env:SHIPPER_TOKN" }"#);
    let e = refused_at(&text, 12);
    assert!(e.starts_with("kinds.toml:12:29:"), "{e}");
    assert!(
        e.contains(
            "header Authorization names the environment variable SHIPPER_TOKN, which is not set"
        ),
        "{e}"
    );
    // The producer side does not read the variables: enqueueing needs no secrets.
    let file = KindsFile::parse("kinds.toml", &text).unwrap();
    assert_eq!(file.kinds_for_enqueue().unwrap().len(), 1);
}

#[test]
fn a_header_value_in_the_file_is_refused_without_being_echoed() {
    let e = refused_at(
        &with_line(
            12,
            r#"headers = { Authorization = "Bearer sk_live_hunter2" }"#,
        ),
        12,
    );
    assert!(
        e.contains("must name an environment variable, as \"env:NAME\""),
        "{e}"
    );
    assert!(!e.contains("hunter2"), "{e}");
    let e = refused_at(
        &with_line(11, r#"url = "https://user:hunter2@127.0.0.1:9/ship""#),
        11,
    );
    assert!(e.contains("url holds credentials"), "{e}");
    assert!(!e.contains("hunter2"), "{e}");
}

#[test]
fn every_declaration_of_the_policy_is_required() {
    for (line, says) in [
        (3, "declares no dependency"),
        (4, "declares no timeout"),
        (7, "declares no ladder"),
        (8, "declares no jitter"),
    ] {
        let e = refused_at(&with_line(line, ""), 1);
        assert!(e.contains(says), "line {line}: {e}");
    }
    let unbounded = with_line(5, "").replace("give_up_after = \"48h\"", "");
    let e = refused_at(&unbounded, 1);
    assert!(e.contains("declares no bound"), "{e}");
    // Either bound alone is enough.
    assert!(KindsFile::parse("k", &with_line(5, "")).is_ok());
    assert!(KindsFile::parse("k", &with_line(6, "")).is_ok());
    let e = refused_at(&with_line(4, r#"timeout = "0s""#), 4);
    assert!(e.contains("longer than zero"), "{e}");
    let e = refused_at(&with_line(2, r#"name = """#), 2);
    assert!(e.contains("kinds.toml:2:8: a wake-up needs a kind"), "{e}");
    let e = refused_at(&with_line(5, "max_attempts = 0"), 5);
    assert!(e.contains("at least 1"), "{e}");
    let e = refused_at(&with_line(8, r#"jitter = "some""#), 8);
    assert!(e.contains("unknown jitter \"some\""), "{e}");
    let e = refused_at(&with_line(8, "jitter = { proportional = 1.5 }"), 8);
    assert!(e.contains("(0, 1]"), "{e}");
}

#[test]
fn http_settings_are_checked() {
    let add = |extra: &str| GOOD.to_owned() + extra;
    let e = refused_at(&add("[kind.http.status]\n418 = \"teapot\"\n"), 14);
    assert!(e.contains("status 418: unknown outcome \"teapot\""), "{e}");
    let e = refused_at(&add("[kind.http.status]\n700 = \"transient\"\n"), 14);
    assert!(e.contains("not an HTTP status code"), "{e}");
    let e = refused_at(&add("[kind.http.status]\n503 = \"backpressure\"\n"), 14);
    assert!(e.contains("own pressure"), "{e}");
    let e = refused_at(
        &with_line(12, r#"headers = { Idempotency-Key = "env:SHIPPER_TOKEN" }"#),
        12,
    );
    assert!(e.contains("carries the effect key"), "{e}");
    let e = refused_at(&with_line(11, r#"url = "ftp://127.0.0.1/ship""#), 11);
    assert!(e.contains("http:// or https://"), "{e}");
    let e = refused_at(
        &add("remote_id = { header = \"X-Id\", json = \"id\" }\n"),
        13,
    );
    assert!(e.contains("remote_id names one place"), "{e}");
    let twice = GOOD.to_owned() + "\n" + GOOD;
    let e = refused_at(&twice, 15);
    assert!(e.contains("declared twice"), "{e}");
    let e = refused_at("# nothing\n", 1);
    assert!(e.contains("declares no kinds"), "{e}");
    let e = refused_at("[[kind]\nname = 1\n", 1);
    assert!(e.starts_with("kinds.toml:1:"), "{e}");
}

/// A kind names where its alerts go: its own webhook, before the worker's routes and default
/// (its dead-letter sinks, which the alerter's route picks first). A route that is not an
/// http(s) URL is refused at its line, without quoting it (a webhook URL may carry a token).
#[test]
fn a_kind_names_its_alert_route() {
    let routed = with_line(
        8,
        "jitter = \"equal\"\nalert_route = \"https://hooks.example/oncall/s3cr3t-path\"",
    );
    let file = KindsFile::parse("kinds.toml", &routed).unwrap();
    let kinds = file.kinds(&env).unwrap();
    let sinks = kinds[0].dead_letter_sinks();
    assert_eq!(sinks.len(), 1);
    // The target as the alert log records it: scheme and host, never the path (a token).
    assert_eq!(sinks[0].target(), "https://hooks.example");
    // Never printed whole: the path may be the secret.
    let shown = format!("{file:?}");
    assert!(
        shown.contains("hooks.example") && !shown.contains("s3cr3t"),
        "{shown}"
    );
    assert!(
        KindsFile::parse("kinds.toml", GOOD)
            .unwrap()
            .kinds(&env)
            .unwrap()[0]
            .dead_letter_sinks()
            .is_empty(),
        "without a route the worker's routes and default apply"
    );
    for bad in ["ftp://hooks.example/x?token=s3cret", "not a url s3cret"] {
        let text = with_line(8, &format!("jitter = \"equal\"\nalert_route = \"{bad}\""));
        let e = refused_at(&text, 9);
        assert!(
            e.contains("alert_route must be an http(s) webhook URL"),
            "{e}"
        );
        assert!(!e.contains("s3cret"), "{e}");
    }
}
