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
    // A database of the test's own, so that benches run by others on the same server (their
    // schemas come and go) cannot change what this test counts.
    let own = OwnDatabase::create(&database);
    let database = own.url.clone();
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
        .args(["--limit-samples", "5"])
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
    // The inserting transactions: one batch of 300; the single enqueues in shared inserts, at
    // least one and at most one per operation.
    assert_eq!(r["enqueue_batched"]["inserts"], 1);
    let single = &r["enqueue_single"];
    let inserts = single["inserts"].as_u64().unwrap();
    assert!(
        (1..=single["ops"].as_u64().unwrap()).contains(&inserts),
        "{single}"
    );
    let drains = r["drains"].as_array().unwrap();
    let labels: Vec<&str> = drains
        .iter()
        .map(|d| d["transport"].as_str().unwrap())
        .collect();
    // The last drain repeats the first under limits with room for everything.
    assert_eq!(
        labels,
        ["poll", "redis", "amqp", "poll", "redis", "amqp", "poll"]
    );
    let limited: Vec<bool> = drains
        .iter()
        .map(|d| d["limited"].as_bool().unwrap())
        .collect();
    assert_eq!(limited, [false, false, false, false, false, false, true]);
    let handlers: Vec<u64> = drains
        .iter()
        .map(|d| d["concurrency"].as_u64().unwrap())
        .collect();
    assert_eq!(handlers, [8, 8, 8, 50, 50, 50, 8]);
    assert_eq!(r["claim_ceiling"]["work"], "claim_complete");
    assert!(r["claim_ceiling"]["ops_per_sec"].as_f64().unwrap() > 0.0);
    // The bound of single enqueues: one-row commits from as many connections as producers.
    assert_eq!(r["single_ceiling"]["work"], "single_commit");
    assert_eq!(r["single_ceiling"]["batch"], 1);
    assert_eq!(r["single_ceiling"]["runs"][0]["connections"], 2);
    assert!(r["single_ceiling"]["ops_per_sec"].as_f64().unwrap() > 0.0);
    for d in drains {
        assert_eq!(d["attempts"], 300, "one attempt per operation: {d}");
        assert!(d["ops_per_sec"].as_f64().unwrap() > 0.0, "{d}");
        assert!(d["commits"].as_i64().unwrap() > 0, "{d}");
        assert!(
            d["worker_peak_rss_bytes"].as_u64().unwrap() > 1 << 20,
            "{d}"
        );
        // Each operation's insert was already written: a drain writes at least its claim's and
        // completion's row versions and the attempt row, far more than 100 bytes each.
        assert!(d["wal_bytes_per_op"].as_f64().unwrap() > 100.0, "{d}");
        assert!(d["cpu_us_per_op"].as_f64().unwrap() > 0.0, "{d}");
    }
    for l in r["latencies"].as_array().unwrap() {
        assert!(l["samples"].as_u64().unwrap() >= 50, "{l}");
        assert!(l["p50_ms"].as_f64().unwrap() > 0.0, "{l}");
    }
    assert_eq!(r["claim_cost"]["finished_rows"], 20000);
    assert!(r["claim_cost"]["ratio"].as_f64().unwrap() > 0.0);
    // The limit-cost phase claimed 100 with no limit, under limits with room and spread over the
    // priority levels, 50 when capped to half, and nothing ahead of a broker's backlog (it checks
    // each claim's count itself and fails the run otherwise).
    let l = &r["limit_cost"];
    assert_eq!(l["samples"], 5, "{l}");
    assert_eq!(l["claim"], 100, "{l}");
    for key in [
        "none_median_ms",
        "room_median_ms",
        "capped_median_ms",
        "room_ratio",
        "levels_median_ms",
        "levels_ratio",
        "ahead_median_ms",
        "ahead_ratio",
    ] {
        assert!(l[key].as_f64().unwrap() > 0.0, "{key}: {l}");
    }
    assert!(!r["verdicts"].as_array().unwrap().is_empty());
    assert_eq!(
        psql(
            &database,
            "SELECT count(*) FROM pg_namespace WHERE nspname LIKE 'oprec\\_bench\\_%'"
        ),
        "0",
        "every phase's schema is dropped afterwards"
    );
}

/// `--stats-rows`: `stats` at a table size with stale statistics, then the operator's statements
/// on a mass death of 5,000; every figure is measured and the schema dropped afterwards.
#[test]
fn stats_at_scale_times_stats_and_the_operator_statements_on_a_mass_death() {
    let database = env(
        "OPREC_TEST_DATABASE_URL",
        "postgres://postgres@127.0.0.1:5432/test",
    );
    let own = OwnDatabase::create(&database);
    let out = common::bin()
        .args(["--database-url", &own.url, "bench", "--json"])
        .args(["--stats-rows", "20000", "--stats-pending", "300"])
        .output()
        .expect("run oprec bench");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON report");
    assert_eq!(
        (&r["finished_rows"], &r["pending_rows"], &r["dead_rows"]),
        (
            &serde_json::Value::from(20000),
            &serde_json::Value::from(300),
            &serde_json::Value::from(5000)
        ),
        "{r}"
    );
    for figure in [
        "stats_median_ms",
        "redrive_review_median_ms",
        "quarantine_count_median_ms",
        "dead_list_median_ms",
        "redrive_as_new_ms",
    ] {
        assert!(
            r[figure].as_f64().is_some_and(|ms| ms > 0.0),
            "{figure}: {r}"
        );
    }
    assert_eq!(
        psql(
            &own.url,
            "SELECT count(*) FROM pg_namespace WHERE nspname LIKE 'oprec\\_bench\\_%'"
        ),
        "0",
        "the schema is dropped afterwards"
    );
}

/// Runs one statement with `psql` (part of PostgreSQL's client, which the tests need); its output.
fn psql(database: &str, sql: &str) -> String {
    let out = std::process::Command::new("psql")
        .args([database, "-v", "ON_ERROR_STOP=1", "-tAc", sql])
        .output()
        .unwrap_or_else(|e| panic!("psql is required (PostgreSQL's client): {e}"));
    assert!(
        out.status.success(),
        "psql {sql}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// A database made for one test on the server of `server_url`, dropped when the test ends.
struct OwnDatabase {
    server_url: String,
    name: String,
    url: String,
}

impl OwnDatabase {
    fn create(server_url: &str) -> Self {
        let name = format!("oprec_bench_test_{}", uuid::Uuid::now_v7().simple());
        psql(server_url, &format!("CREATE DATABASE {name}"));
        let (head, query) = match server_url.split_once('?') {
            Some((h, q)) => (h, Some(q)),
            None => (server_url, None),
        };
        let base = head.rsplit_once('/').map_or(head, |(b, _)| b);
        let url = match query {
            Some(q) => format!("{base}/{name}?{q}"),
            None => format!("{base}/{name}"),
        };
        OwnDatabase {
            server_url: server_url.to_owned(),
            name,
            url,
        }
    }
}

impl Drop for OwnDatabase {
    fn drop(&mut self) {
        let _ = std::process::Command::new("psql")
            .args([self.server_url.as_str(), "-tAc"])
            .arg(format!(
                "DROP DATABASE IF EXISTS {} WITH (FORCE)",
                self.name
            ))
            .output();
    }
}

/// A database that already holds operations (one that serves real work) is refused unless
/// `--yes` says so; the refusal says how many it holds and how much the run would write.
#[test]
fn a_database_that_holds_operations_is_refused_without_yes() {
    let database = env(
        "OPREC_TEST_DATABASE_URL",
        "postgres://postgres@127.0.0.1:5432/test",
    );
    let own = OwnDatabase::create(&database);
    let o = common::Oprec::with_url(own.url.clone());
    o.run(&["migrate"]).ok();
    // Migrated and empty: nothing to refuse (the run stops later, at the bad ceiling).
    o.run(&["bench", "--ops", "10", "--ceiling-secs", "0"])
        .bad_input("the ceiling needs at least one second");
    o.run(&[
        "enqueue",
        "--kind",
        "demo.noop",
        "--payload",
        "{}",
        "--count",
        "3",
    ])
    .ok();
    // 10 batched, 100 single, 10 drained, 20 at the latency rate, no claim-cost table, no
    // limit-cost rounds.
    let refused = o.run(&[
        "bench",
        "--ops",
        "10",
        "--concurrency",
        "8",
        "--latency-rate",
        "10",
        "--latency-secs",
        "2",
        "--finished-rows",
        "0",
        "--limit-samples",
        "0",
    ]);
    refused.bad_input("holds 3 operations");
    assert!(
        refused.stderr.contains("writes about 140 operation rows")
            && refused.stderr.contains("--yes"),
        "{}",
        refused.stderr
    );
    // With --yes the run goes ahead (and stops at the bad ceiling, before writing anything).
    o.run(&["bench", "--yes", "--ops", "10", "--ceiling-secs", "0"])
        .bad_input("the ceiling needs at least one second");
    assert_eq!(psql(&own.url, "SELECT count(*) FROM operations"), "3");
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
        "--limit-samples",
        "--ceiling-secs",
        "--json",
        "--out",
    ] {
        assert!(text.contains(flag), "{flag} missing: {text}");
    }
}
