//! `oprec bench` end to end with tiny sizes, against the PostgreSQL, Redis and RabbitMQ the tests
//! use (OPREC_TEST_DATABASE_URL, OPREC_TEST_REDIS_URL, OPREC_TEST_AMQP_URL). A missing service
//! fails the test, with the benchmark's message.

mod common;

fn env(name: &str, default: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| default.to_owned())
}

#[test]
fn a_tiny_run_measures_every_phase_on_every_transport() {
    let database = env(
        "OPREC_TEST_DATABASE_URL",
        "postgres://postgres@127.0.0.1:5432/test",
    );
    let transports = [
        "poll".to_owned(),
        env("OPREC_TEST_REDIS_URL", "redis://127.0.0.1:6379"),
        env(
            "OPREC_TEST_AMQP_URL",
            "amqp://guest:guest@127.0.0.1:5672/%2f",
        ),
    ]
    .join(",");
    let schemas_before = bench_schemas(&database);
    // Unencrypted on purpose, and the report must say so (`sslmode` unset would be `prefer`).
    let sep = if database.contains('?') { '&' } else { '?' };
    let plain = format!("{database}{sep}sslmode=disable");
    let dir = tempfile::tempdir().unwrap();
    let out_file = dir.path().join("bench.json");
    let out = common::bin()
        .args(["--database-url", &plain, "bench", "--json"])
        .args(["--ops", "300", "--concurrency", "8,50", "--producers", "2"])
        .args(["--latency-rate", "100", "--latency-secs", "1"])
        .args(["--finished-rows", "20000", "--ceiling-secs", "1"])
        .args(["--transports", &transports])
        .arg("--out")
        .arg(&out_file)
        .output()
        .expect("run oprec bench");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(0),
        "oprec bench failed (are PostgreSQL, Redis and RabbitMQ running?): {stderr}"
    );
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON report");
    assert_eq!(
        r,
        serde_json::from_str::<serde_json::Value>(&std::fs::read_to_string(&out_file).unwrap())
            .unwrap(),
        "--out writes the same report"
    );
    assert_eq!(
        r["machine"]["tls"], false,
        "sslmode=disable: {}",
        r["machine"]
    );
    assert!(r["ceiling"]["ops_per_sec"].as_f64().unwrap() > 0.0);
    assert_eq!(r["enqueue_batched"]["ops"], 300);
    assert!(r["enqueue_single"]["ops_per_sec"].as_f64().unwrap() > 0.0);
    let drains = r["drains"].as_array().unwrap();
    let labels: Vec<&str> = drains
        .iter()
        .map(|d| d["transport"].as_str().unwrap())
        .collect();
    assert_eq!(labels, ["poll", "redis", "amqp", "poll", "redis", "amqp"]);
    let handlers: Vec<u64> = drains
        .iter()
        .map(|d| d["concurrency"].as_u64().unwrap())
        .collect();
    assert_eq!(handlers, [8, 8, 8, 50, 50, 50]);
    assert_eq!(r["claim_ceiling"]["work"], "claim_complete");
    assert!(r["claim_ceiling"]["ops_per_sec"].as_f64().unwrap() > 0.0);
    for d in drains {
        assert_eq!(d["attempts"], 300, "one attempt per operation: {d}");
        assert!(d["ops_per_sec"].as_f64().unwrap() > 0.0, "{d}");
        assert!(d["commits"].as_i64().unwrap() > 0, "{d}");
        assert!(
            d["worker_peak_rss_bytes"].as_u64().unwrap() > 1 << 20,
            "{d}"
        );
    }
    for l in r["latencies"].as_array().unwrap() {
        assert!(l["samples"].as_u64().unwrap() >= 50, "{l}");
        assert!(l["p50_ms"].as_f64().unwrap() > 0.0, "{l}");
    }
    assert_eq!(r["claim_cost"]["finished_rows"], 20000);
    assert!(r["claim_cost"]["ratio"].as_f64().unwrap() > 0.0);
    assert!(!r["verdicts"].as_array().unwrap().is_empty());
    if let (Some(before), Some(after)) = (schemas_before, bench_schemas(&database)) {
        assert_eq!(after, before, "every phase's schema is dropped afterwards");
    }
}

/// How many `oprec_bench_*` schemas exist (`None` without `psql`).
fn bench_schemas(database: &str) -> Option<u64> {
    let out = std::process::Command::new("psql")
        .args([database, "-tAc"])
        .arg("SELECT count(*) FROM pg_namespace WHERE nspname LIKE 'oprec\\_bench\\_%'")
        .output()
        .ok()
        .filter(|o| o.status.success())?;
    String::from_utf8_lossy(&out.stdout).trim().parse().ok()
}

#[test]
fn only_postgres_is_benchmarked() {
    let o = common::Oprec::new();
    o.run(&["bench", "--ops", "10"])
        .bad_input("oprec bench measures PostgreSQL");
}

#[test]
fn an_unreachable_database_fails_with_a_message() {
    let out = common::bin()
        .args(["--database-url", "postgres://postgres@127.0.0.1:1/none"])
        .args(["bench", "--ops", "10"])
        .output()
        .expect("run oprec bench");
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("PostgreSQL"), "{err}");
}

#[test]
fn help_names_the_flags() {
    let out = common::bin().args(["bench", "--help"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    for flag in [
        "--database-url",
        "--ops",
        "--concurrency",
        "--transports",
        "--producers",
        "--latency-rate",
        "--latency-secs",
        "--finished-rows",
        "--ceiling-secs",
        "--json",
        "--out",
    ] {
        assert!(text.contains(flag), "{flag} missing: {text}");
    }
}
