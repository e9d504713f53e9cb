//! Process-level faults, with the real `oprec` binary run as separate worker processes on three
//! rigs: PostgreSQL + Redis Streams, PostgreSQL + RabbitMQ, and SQLite poll-only (the in-memory
//! transport cannot cross processes).
//!
//! - a worker SIGKILLed mid-handler: the lease expires, a second worker retries, one `vanished`
//!   attempt then `succeeded`;
//! - `demo.crash` under a restarting worker: dead (`crash_loop`) after exactly `--vanish-limit`
//!   vanished attempts;
//! - SIGTERM during work: the worker drains and exits 0 by itself, short work finishes, long work
//!   is released, nothing is left `running`;
//! - `demo.effect` × 300 under two workers, one SIGKILLed and restarted twice: nothing lost, one
//!   effect per operation, every vanished attempt in the history;
//! - a worker SIGKILLed before an effect and after it (before the outcome): one effect each;
//! - a zombie worker (SIGSTOP past its lease, another finishes, SIGCONT): its heartbeat and its
//!   completion are refused and reported as stale claims, and change nothing.
//!
//! Each test gets a fresh PostgreSQL schema (named through `?options=-csearch_path%3D...` on the
//! URL the binary gets) or SQLite file, and a fresh Redis stream (`?stream=`) or RabbitMQ queue
//! (`?queue=`, deleted by the broker two minutes after its last consumer left). Services:
//! `OPREC_TEST_DATABASE_URL` (default `postgres://postgres@127.0.0.1:5432/test`),
//! `OPREC_TEST_REDIS_URL` (default `redis://127.0.0.1:6379`, database 9 unless the URL names
//! one), `OPREC_TEST_AMQP_URL` (default `amqp://guest:guest@127.0.0.1:5672/%2f`). Every wait has a
//! deadline, and every child process is killed when its guard drops, on failure too. A failing
//! test keeps its schema or folder and prints where, with the tail of every process's log.

#![cfg(unix)]

mod common;

use std::cell::RefCell;
use std::fs::File;
use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::Value;
use sqlx::postgres::{PgPool, PgPoolOptions};
use sqlx::sqlite::{SqlitePool, SqlitePoolOptions};
use sqlx::{AssertSqlSafe, Row};

/// SIGKILL and SIGABRT, as `ExitStatus::signal` reports them.
const SIGKILL: i32 = 9;
const SIGABRT: i32 = 6;

fn env_or(name: &str, default: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| default.to_owned())
}

/// `url` with `param` appended to its query.
fn with_param(url: &str, param: &str) -> String {
    let sep = if url.contains('?') { '&' } else { '?' };
    format!("{url}{sep}{param}")
}

/// A name no other test (in this run or an earlier one) uses.
fn unique_tag() -> String {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!(
        "{}_{nanos:x}_{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// The Redis URL, on logical database 9 unless the URL names one (as `tests/broker.rs`).
fn redis_url() -> String {
    let base = env_or("OPREC_TEST_REDIS_URL", "redis://127.0.0.1:6379");
    let has_db = base
        .split_once("://")
        .is_some_and(|(_, rest)| rest.trim_end_matches('/').contains('/'));
    if has_db {
        base
    } else {
        format!("{}/9", base.trim_end_matches('/'))
    }
}

/// Polls `probe` every `every` until it answers, or `limit` passes.
fn poll<T>(limit: Duration, every: Duration, mut probe: impl FnMut() -> Option<T>) -> Option<T> {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(v) = probe() {
            return Some(v);
        }
        if Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(every);
    }
}

/// The pairing a test runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RigKind {
    PostgresRedis,
    PostgresAmqp,
    SqlitePoll,
}

/// The test's own pool on the rig's database, for what the binary does not show in bulk.
enum Pool {
    Pg(PgPool),
    Sqlite(SqlitePool),
}

/// A fresh database and broker destination for one test, the URLs the binary gets for them, and
/// the log files of every process the test started.
struct Rig {
    kind: RigKind,
    name: String,
    dir: Option<tempfile::TempDir>,
    db: String,
    transport: String,
    rt: tokio::runtime::Runtime,
    pool: Option<Pool>,
    /// PostgreSQL: the server URL and the schema to drop at the end.
    schema: Option<(String, String)>,
    /// Redis: the server URL and the stream to delete at the end.
    stream: Option<(String, String)>,
    logs: RefCell<Vec<(String, PathBuf, PathBuf)>>,
    started: Instant,
}

impl Rig {
    /// A migrated, empty rig; fails loudly when a service is missing.
    fn new(kind: RigKind, test: &str) -> Rig {
        let tag = unique_tag();
        let dir = tempfile::tempdir().expect("temp dir");
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let (db, schema) = match kind {
            RigKind::SqlitePoll => (
                format!(
                    "sqlite://{}?mode=rwc",
                    dir.path().join("oprec.db").display()
                ),
                None,
            ),
            RigKind::PostgresRedis | RigKind::PostgresAmqp => {
                let server = env_or(
                    "OPREC_TEST_DATABASE_URL",
                    "postgres://postgres@127.0.0.1:5432/test",
                );
                let schema = format!("oprec_test_pf_{tag}");
                rt.block_on(async {
                    let admin = admin_pool(&server).await;
                    sqlx::query(AssertSqlSafe(format!("CREATE SCHEMA {schema}")))
                        .execute(&admin)
                        .await
                        .expect("create schema");
                    admin.close().await;
                });
                (
                    with_param(&server, &format!("options=-csearch_path%3D{schema}")),
                    Some((server, schema)),
                )
            }
        };
        let (transport, stream) = match kind {
            RigKind::SqlitePoll => ("poll".to_owned(), None),
            RigKind::PostgresRedis => {
                let server = redis_url();
                let key = format!("oprec:pf:{tag}");
                (
                    with_param(&server, &format!("stream={key}&group=oprec-pf")),
                    Some((server, key)),
                )
            }
            RigKind::PostgresAmqp => {
                let server = env_or(
                    "OPREC_TEST_AMQP_URL",
                    "amqp://guest:guest@127.0.0.1:5672/%2f",
                );
                (
                    with_param(&server, &format!("queue=oprec.pf.{tag}&queue_expires=120")),
                    None,
                )
            }
        };
        let mut rig = Rig {
            kind,
            name: test.to_owned(),
            dir: Some(dir),
            db,
            transport,
            rt,
            pool: None,
            schema,
            stream,
            logs: RefCell::default(),
            started: Instant::now(),
        };
        rig.oprec_ok(&["migrate"]);
        if kind != RigKind::SqlitePoll {
            let depth = rig.oprec(&["transport", "depth", "--json"]);
            assert!(
                depth.0.success(),
                "{kind:?}: the broker is required ({}): {}",
                oprec::redact_url(&rig.transport),
                depth.2
            );
        }
        let pool = rig.rt.block_on(async {
            match kind {
                RigKind::SqlitePoll => Pool::Sqlite(
                    SqlitePoolOptions::new()
                        .max_connections(1)
                        .connect(&rig.db)
                        .await
                        .expect("sqlite pool"),
                ),
                _ => Pool::Pg(
                    PgPoolOptions::new()
                        .max_connections(1)
                        .acquire_timeout(Duration::from_secs(10))
                        .connect(&rig.db)
                        .await
                        .expect("postgres pool"),
                ),
            }
        });
        rig.pool = Some(pool);
        if let Some((_, schema)) = &rig.schema {
            // sqlx honours `options=-csearch_path=...`: the binary's tables are in the schema.
            let n = rig.scalar(&format!(
                "SELECT count(*) FROM information_schema.tables \
                 WHERE table_schema = '{schema}' AND table_name IN ('operations', 'operation_attempts')"
            ));
            assert_eq!(
                n, 2,
                "`oprec migrate` did not create its tables in {schema}"
            );
        }
        rig
    }

    fn dir(&self) -> &std::path::Path {
        self.dir.as_ref().expect("dir").path()
    }

    /// The binary, pointed at this rig, its output going to log files named after `name`.
    fn spawn(&self, name: &str, args: &[&str]) -> Proc {
        let n = self.logs.borrow().len();
        let out = self.dir().join(format!("{n:02}-{name}.out"));
        let err = self.dir().join(format!("{n:02}-{name}.err"));
        let child = common::bin()
            .current_dir(self.dir())
            .env("OPREC_DATABASE_URL", &self.db)
            .env("OPREC_TRANSPORT_URL", &self.transport)
            // The worker id is "$HOSTNAME-$PID": lets the test tell its workers' claims apart.
            .env("HOSTNAME", name)
            .args(args)
            .stdin(Stdio::null())
            .stdout(File::create(&out).expect("log file"))
            .stderr(File::create(&err).expect("log file"))
            .spawn()
            .expect("spawn oprec");
        self.logs.borrow_mut().push((
            format!("{name} {}", args.join(" ")),
            out.clone(),
            err.clone(),
        ));
        Proc {
            name: name.to_owned(),
            child,
            out,
            err,
        }
    }

    /// A worker running the demo kinds, re-waking after 1 s, with `extra` flags.
    fn worker(&self, name: &str, extra: &[&str]) -> Proc {
        let args = [&["worker", "--demo", "--rewake-after", "1s"][..], extra].concat();
        self.spawn(name, &args)
    }

    /// Runs a command to its end (30 s at most): exit status, stdout, stderr.
    fn oprec(&self, args: &[&str]) -> (ExitStatus, String, String) {
        let mut p = self.spawn("cmd", args);
        let Some(status) = p.wait_for_exit(Duration::from_secs(30)) else {
            panic!("oprec {} did not finish in 30 s", args.join(" "));
        };
        (status, p.stdout(), p.stderr())
    }

    /// Runs a command that must succeed; its stdout.
    fn oprec_ok(&self, args: &[&str]) -> String {
        let (status, out, err) = self.oprec(args);
        assert!(
            status.success(),
            "oprec {} failed ({status}): {err}",
            args.join(" ")
        );
        out
    }

    /// A command's stdout as JSON.
    fn oprec_json(&self, args: &[&str]) -> Value {
        let out = self.oprec_ok(args);
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("not JSON ({e}): {out}"))
    }

    /// `oprec ops show ID --json`: (status, terminal reason, attempt outcomes, attempt workers).
    fn history(&self, id: &str) -> (String, Option<String>, Vec<String>, Vec<String>) {
        let d = self.oprec_json(&["ops", "show", id, "--json"]);
        let attempts = d["attempts"].as_array().cloned().unwrap_or_default();
        let field = |a: &Value, f: &str| a[f].as_str().unwrap_or_default().to_owned();
        (
            d["operation"]["status"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            d["operation"]["terminal_reason"]
                .as_str()
                .map(str::to_owned),
            attempts.iter().map(|a| field(a, "outcome")).collect(),
            attempts.iter().map(|a| field(a, "worker_id")).collect(),
        )
    }

    /// Enqueues one operation; its id.
    fn enqueue(&self, kind: &str, payload: &str) -> String {
        let v = self.oprec_json(&["enqueue", "--kind", kind, "--payload", payload, "--json"]);
        v["id"].as_str().expect("id").to_owned()
    }

    /// One integer from the test's own pool.
    fn scalar(&self, sql: &str) -> i64 {
        let sql = sql.to_owned();
        self.rt.block_on(async {
            let row = match self.pool.as_ref().expect("pool") {
                Pool::Pg(p) => sqlx::query(AssertSqlSafe(sql.clone()))
                    .fetch_one(p)
                    .await
                    .map(|r| r.try_get::<Option<i64>, _>(0)),
                Pool::Sqlite(p) => sqlx::query(AssertSqlSafe(sql.clone()))
                    .fetch_one(p)
                    .await
                    .map(|r| r.try_get::<Option<i64>, _>(0)),
            };
            row.and_then(|v| v)
                .unwrap_or_else(|e| panic!("{sql}: {e}"))
                .unwrap_or(0)
        })
    }

    /// (text, count) pairs from the test's own pool.
    fn counts(&self, sql: &str) -> Vec<(String, i64)> {
        let sql = sql.to_owned();
        self.rt.block_on(async {
            let rows: Result<Vec<(String, i64)>, sqlx::Error> =
                match self.pool.as_ref().expect("pool") {
                    Pool::Pg(p) => {
                        sqlx::query_as(AssertSqlSafe(sql.clone()))
                            .fetch_all(p)
                            .await
                    }
                    Pool::Sqlite(p) => {
                        sqlx::query_as(AssertSqlSafe(sql.clone()))
                            .fetch_all(p)
                            .await
                    }
                };
            rows.unwrap_or_else(|e| panic!("{sql}: {e}"))
        })
    }

    /// Operations per status.
    fn statuses(&self) -> Vec<(String, i64)> {
        self.counts("SELECT status, count(*) FROM operations GROUP BY status ORDER BY status")
    }

    fn running(&self) -> i64 {
        self.scalar("SELECT count(*) FROM operations WHERE status = 'running'")
    }

    /// The tail of every process's output, for failure messages.
    fn dump(&self) -> String {
        let mut s = format!(
            "--- {} on {:?}: database {}, transport {}, folder {}\n",
            self.name,
            self.kind,
            self.db,
            oprec::redact_url(&self.transport),
            self.dir().display()
        );
        for (what, out, err) in self.logs.borrow().iter() {
            s.push_str(&format!("--- oprec {what}\n"));
            for path in [out, err] {
                let text = std::fs::read_to_string(path).unwrap_or_default();
                let lines: Vec<&str> = text.lines().collect();
                for l in &lines[lines.len().saturating_sub(15)..] {
                    s.push_str(&format!("    {l}\n"));
                }
            }
        }
        s
    }

    /// One line for the report.
    fn report(&self, what: &str) {
        eprintln!(
            "[process_faults] {} {:?}: {what}; {:.1} s",
            self.name,
            self.kind,
            self.started.elapsed().as_secs_f64()
        );
    }
}

impl Drop for Rig {
    fn drop(&mut self) {
        let failed = std::thread::panicking();
        if let Some(pool) = self.pool.take() {
            self.rt.block_on(async {
                match pool {
                    Pool::Pg(p) => p.close().await,
                    Pool::Sqlite(p) => p.close().await,
                }
            });
        }
        if failed {
            eprintln!("{}", self.dump());
            if let Some(dir) = self.dir.take() {
                eprintln!(
                    "kept for inspection: folder {}, database {}",
                    dir.keep().display(),
                    self.db
                );
            }
            return;
        }
        if let Some((server, schema)) = self.schema.take() {
            self.rt.block_on(async {
                let admin = admin_pool(&server).await;
                let _ = sqlx::query(AssertSqlSafe(format!("DROP SCHEMA {schema} CASCADE")))
                    .execute(&admin)
                    .await;
                admin.close().await;
            });
        }
        if let Some((server, key)) = self.stream.take() {
            redis_del(&server, &key);
        }
    }
}

/// A pool on the PostgreSQL server itself (for creating and dropping schemas).
async fn admin_pool(server: &str) -> PgPool {
    PgPoolOptions::new()
        .max_connections(1)
        .acquire_timeout(Duration::from_secs(10))
        .connect(server)
        .await
        .unwrap_or_else(|e| {
            panic!("PostgreSQL (OPREC_TEST_DATABASE_URL) is required: {e}");
        })
}

/// Best effort: deletes `key` on the Redis server `url` names (plain `redis://` URLs; the test
/// does not depend on it, it only keeps the server tidy).
fn redis_del(url: &str, key: &str) {
    let Some(rest) = url.strip_prefix("redis://") else {
        return;
    };
    let rest = rest.split(['?', '#']).next().unwrap_or_default();
    let (authority, db) = rest.split_once('/').unwrap_or((rest, ""));
    let (userinfo, host) = match authority.rsplit_once('@') {
        Some((u, h)) => (Some(u), h),
        None => (None, authority),
    };
    let host = if host.contains(':') {
        host.to_owned()
    } else {
        format!("{host}:6379")
    };
    let mut commands: Vec<Vec<&str>> = Vec::new();
    match userinfo.and_then(|u| u.split_once(':')) {
        Some(("", password)) => commands.push(vec!["AUTH", password]),
        Some((user, password)) => commands.push(vec!["AUTH", user, password]),
        None => {}
    }
    let db = db.trim_end_matches('/');
    if !db.is_empty() {
        commands.push(vec!["SELECT", db]);
    }
    commands.push(vec!["DEL", key]);
    let Some(addr) = host.to_socket_addrs().ok().and_then(|mut a| a.next()) else {
        return;
    };
    let Ok(mut conn) = TcpStream::connect_timeout(&addr, Duration::from_secs(2)) else {
        return;
    };
    let _ = conn.set_read_timeout(Some(Duration::from_secs(2)));
    let mut wire = String::new();
    for c in &commands {
        wire.push_str(&format!("*{}\r\n", c.len()));
        for arg in c {
            wire.push_str(&format!("${}\r\n{arg}\r\n", arg.len()));
        }
    }
    if conn.write_all(wire.as_bytes()).is_err() {
        return;
    }
    // Wait for the replies (one line each), so the DEL has run before the socket closes.
    let mut replies = Vec::new();
    let mut buf = [0u8; 256];
    while replies.iter().filter(|b| **b == b'\n').count() < commands.len() {
        match conn.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => replies.extend_from_slice(&buf[..n]),
        }
    }
}

/// A child process, killed (SIGKILL) and reaped when dropped.
struct Proc {
    name: String,
    child: Child,
    out: PathBuf,
    err: PathBuf,
}

impl Proc {
    /// Kills with SIGKILL and reaps; the exit status.
    fn sigkill(&mut self) -> ExitStatus {
        let _ = self.child.kill();
        self.child.wait().expect("reap")
    }

    /// Sends SIGTERM.
    fn sigterm(&self) {
        self.signal("TERM");
    }

    /// Sends the signal `name` (`TERM`, `STOP`, `CONT`).
    fn signal(&self, name: &str) {
        let status = Command::new("kill")
            .arg(format!("-{name}"))
            .arg(self.child.id().to_string())
            .status()
            .expect("kill");
        assert!(
            status.success(),
            "could not send SIG{name} to {}",
            self.name
        );
    }

    /// Waits up to `limit` for the process to exit by itself.
    fn wait_for_exit(&mut self, limit: Duration) -> Option<ExitStatus> {
        poll(limit, Duration::from_millis(20), || {
            self.child.try_wait().expect("try_wait")
        })
    }

    /// Waits (15 s at most) for the worker's start-up line: its store is open, its tables made.
    fn wait_until_up(&mut self) {
        let up = poll(Duration::from_secs(15), Duration::from_millis(20), || {
            self.stderr().contains(": running ").then_some(())
        });
        assert!(up.is_some(), "{} did not start", self.name);
    }

    fn stdout(&self) -> String {
        std::fs::read_to_string(&self.out).unwrap_or_default()
    }

    fn stderr(&self) -> String {
        std::fs::read_to_string(&self.err).unwrap_or_default()
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Scenario 1: a worker SIGKILLed mid-handler: the lease (2 s) expires, a second worker's rescuer records
/// the attempt `vanished`, the second worker retries it and it succeeds.
fn sigkill_mid_handler(kind: RigKind) {
    let rig = Rig::new(kind, "sigkill_mid_handler");
    let id = rig.enqueue("demo.slow", r#"{"ms": 2500}"#);
    let mut first = rig.worker("pf-first", &["--lease", "2s"]);
    let running = poll(Duration::from_secs(15), Duration::from_millis(20), || {
        (rig.running() == 1).then_some(())
    });
    assert!(running.is_some(), "never claimed");
    // Mid-handler: the claim is committed and the handler sleeps for 2.5 s.
    std::thread::sleep(Duration::from_millis(300));
    let killed = first.sigkill();
    assert_eq!(killed.signal(), Some(SIGKILL));
    assert_eq!(rig.running(), 1, "no outcome was written: still running");

    let mut second = rig.worker("pf-second", &["--lease", "2s", "--exit-when-idle"]);
    let Some(status) = second.wait_for_exit(Duration::from_secs(30)) else {
        panic!("the second worker did not go idle");
    };
    assert!(status.success(), "{status}");
    let summary = second.stdout();
    assert!(
        summary.contains("succeeded 1") && summary.contains("vanished 1"),
        "{summary}"
    );

    let (status, _, outcomes, workers) = rig.history(&id);
    assert_eq!(status, "succeeded");
    assert_eq!(outcomes, ["vanished", "succeeded"]);
    assert!(
        workers[0].starts_with("pf-first-") && workers[1].starts_with("pf-second-"),
        "{workers:?}"
    );
    rig.report("1 SIGKILL, 1 operation, 1 vanished attempt then succeeded, lost 0");
}

/// Scenario 2: `demo.crash` (crash_times 99) under a worker restarted whenever it dies: each attempt
/// aborts the process, the next worker's rescuer records it `vanished`, and after
/// `--vanish-limit 3` the operation is dead (crash_loop), with exactly 3 attempts.
fn crash_loop(kind: RigKind) {
    const MAX_STARTS: usize = 8;
    let rig = Rig::new(kind, "crash_loop");
    let id = rig.enqueue("demo.crash", r#"{"crash_times": 99}"#);
    let mut aborts = 0;
    let mut clean_exit = false;
    for n in 0..MAX_STARTS {
        let mut w = rig.worker(
            &format!("pf-w{n}"),
            &["--lease", "1s", "--vanish-limit", "3", "--exit-when-idle"],
        );
        let Some(status) = w.wait_for_exit(Duration::from_secs(20)) else {
            panic!("worker {n} neither crashed nor went idle in 20 s");
        };
        if status.success() {
            clean_exit = true;
            break;
        }
        assert_eq!(
            status.signal(),
            Some(SIGABRT),
            "worker {n} died another way: {status}"
        );
        assert!(w.stderr().contains("demo.crash: aborting"));
        aborts += 1;
    }
    assert!(clean_exit, "still crashing after {MAX_STARTS} starts");
    let (status, reason, outcomes, _) = rig.history(&id);
    assert_eq!(
        (status.as_str(), reason.as_deref()),
        ("dead", Some("crash_loop"))
    );
    assert_eq!(outcomes, ["vanished", "vanished", "vanished"]);
    assert_eq!(aborts, 3, "one process abort per attempt");
    rig.report(&format!(
        "{aborts} aborts, {} worker starts, 1 operation dead (crash_loop) after 3 vanished attempts",
        aborts + 1
    ));
}

/// Scenario 3, SIGTERM during work: 3 operations of 0.8 s and 2 of 20 s, all running; with
/// `--drain-timeout 3s` the worker finishes the short ones, releases the long ones and exits 0
/// by itself; nothing is left `running`.
fn sigterm_drains(kind: RigKind) {
    let rig = Rig::new(kind, "sigterm_drains");
    let enqueue = |payload: &str, n: &str| {
        rig.oprec_ok(&[
            "enqueue",
            "--kind",
            "demo.slow",
            "--payload",
            payload,
            "--count",
            n,
        ]);
    };
    enqueue(r#"{"ms": 800}"#, "3");
    enqueue(r#"{"ms": 20000}"#, "2");
    let mut w = rig.worker("pf-drain", &["--drain-timeout", "3s", "--lease", "10s"]);
    let all_running = poll(Duration::from_secs(15), Duration::from_millis(20), || {
        (rig.running() == 5).then_some(())
    });
    assert!(all_running.is_some(), "not all running");
    let signalled = Instant::now();
    w.sigterm();
    let Some(status) = w.wait_for_exit(Duration::from_secs(15)) else {
        panic!("the worker did not exit after SIGTERM");
    };
    let drain = signalled.elapsed();
    assert!(status.success(), "{status}");
    assert!(w.stderr().contains("draining"), "{}", w.stderr());
    assert!(
        w.stdout().contains("succeeded 3") && w.stdout().contains("released 2"),
        "{}",
        w.stdout()
    );
    assert_eq!(rig.running(), 0);

    let ops = rig.oprec_json(&["ops", "list", "--json"]);
    let ops = ops.as_array().expect("array");
    assert_eq!(ops.len(), 5);
    for op in ops {
        let id = op["id"].as_str().expect("id");
        let (status, _, outcomes, _) = rig.history(id);
        if op["payload"]["ms"] == 800 {
            assert_eq!(status, "succeeded", "{id}");
            assert_eq!(outcomes, ["succeeded"], "{id}");
        } else {
            assert_eq!(status, "pending", "{id}");
            assert_eq!(
                outcomes.last().map(String::as_str),
                Some("released"),
                "{id}: {outcomes:?}"
            );
        }
    }
    rig.report(&format!(
        "1 SIGTERM, 5 operations: 3 succeeded, 2 released to pending, 0 running, exit 0 {:.1} s after the signal",
        drain.as_secs_f64()
    ));
}

/// Scenario 4: `demo.effect` × 300 under two workers, one of them SIGKILLed while it holds
/// claims, restarted, killed again the same way and restarted again. The work comes in three
/// waves of 100 (eligible at once, after 3 s, after 6 s), so that the run lasts long enough for
/// both kills and every broker spreads each wave over both workers (the first AMQP consumer
/// would otherwise prefetch the whole backlog). Every operation succeeds, with exactly one effect
/// row each, and the history accounts for every vanished attempt.
fn kills_during_a_run(kind: RigKind) {
    const OPS: i64 = 300;
    let rig = Rig::new(kind, "kills_during_a_run");
    for delay in ["0s", "3s", "6s"] {
        rig.oprec_ok(&[
            "enqueue",
            "--kind",
            "demo.effect",
            "--payload",
            "{}",
            "--count",
            &(OPS / 3).to_string(),
            "--delay",
            delay,
        ]);
    }
    // No --exit-when-idle: between waves there is nothing eligible, and an idle worker would
    // leave. The workers run until every operation has ended, then drain on SIGTERM.
    let flags = ["--lease", "2s", "--concurrency", "2"];
    let mut steady = rig.worker("pf-steady", &flags);
    // Two workers starting at the same moment on PostgreSQL can fail: both run
    // `CREATE TABLE IF NOT EXISTS demo_effects` and one loses with a unique violation on
    // pg_type. Start the second once the first is up.
    steady.wait_until_up();
    let mut victim = rig.worker("pf-victim0", &flags);
    let mut held_at_kill = Vec::new();
    for n in 0..2 {
        // Kill the victim while it holds claims (operations it claimed are running).
        let holding = poll(Duration::from_secs(20), Duration::from_millis(2), || {
            let held = rig.scalar(&format!(
                "SELECT count(*) FROM operations \
                 WHERE status = 'running' AND worker_id LIKE 'pf-victim{n}-%'"
            ));
            (held > 0).then_some(held)
        });
        let Some(held) = holding else {
            panic!("victim {n} never held a claim (did the run end first?)");
        };
        assert_eq!(victim.sigkill().signal(), Some(SIGKILL));
        held_at_kill.push(held);
        victim = rig.worker(&format!("pf-victim{}", n + 1), &flags);
    }
    let ended = poll(Duration::from_secs(60), Duration::from_millis(100), || {
        let ended = rig.scalar(
            "SELECT count(*) FROM operations WHERE status IN ('succeeded', 'dead', 'cancelled')",
        );
        (ended == OPS).then_some(())
    });
    assert!(
        ended.is_some(),
        "not every operation ended: {:?}",
        rig.statuses()
    );
    for w in [&mut steady, &mut victim] {
        w.sigterm();
        let Some(status) = w.wait_for_exit(Duration::from_secs(15)) else {
            panic!("{} did not stop after SIGTERM", w.name);
        };
        assert!(status.success(), "{}: {status}", w.name);
    }

    // Nothing lost: every operation succeeded (the binary's view, then the table's).
    let ok = rig.oprec_json(&[
        "ops",
        "list",
        "--status",
        "succeeded",
        "--limit",
        "1000",
        "--json",
    ]);
    assert_eq!(ok.as_array().map(Vec::len), Some(OPS as usize));
    assert_eq!(rig.statuses(), [("succeeded".to_owned(), OPS)]);
    // One effect per operation, keyed by its effect key (the remote id).
    let effects = rig.scalar("SELECT count(*) FROM demo_effects");
    let matched = rig.scalar(
        "SELECT count(*) FROM operations o JOIN demo_effects e ON e.effect_key = o.remote_id",
    );
    assert_eq!((effects, matched), (OPS, OPS));
    // The history: one succeeded attempt per operation, every other attempt vanished, and every
    // vanished attempt belonged to a killed victim.
    let outcomes = rig.counts(
        "SELECT outcome, count(*) FROM operation_attempts GROUP BY outcome ORDER BY outcome",
    );
    let of = |o: &str| {
        outcomes
            .iter()
            .find(|(k, _)| k == o)
            .map(|(_, n)| *n)
            .unwrap_or(0)
    };
    let (succeeded, vanished) = (of("succeeded"), of("vanished"));
    assert_eq!(
        succeeded + vanished,
        outcomes.iter().map(|(_, n)| n).sum::<i64>(),
        "only succeeded and vanished attempts: {outcomes:?}"
    );
    assert_eq!(succeeded, OPS, "{outcomes:?}");
    let attempts = rig.scalar("SELECT CAST(sum(attempt) AS BIGINT) FROM operations");
    assert_eq!(
        attempts,
        succeeded + vanished,
        "sum of attempts = successes + vanished ({outcomes:?})"
    );
    assert!(
        vanished >= 1,
        "the kills landed while claims were held ({held_at_kill:?}), so some attempt vanished"
    );
    let strays = rig.scalar(
        "SELECT count(*) FROM operation_attempts WHERE outcome = 'vanished' \
         AND worker_id NOT LIKE 'pf-victim0-%' AND worker_id NOT LIKE 'pf-victim1-%'",
    );
    assert_eq!(strays, 0, "a vanished attempt from a worker nobody killed");
    // Handler executions: at least one per operation, at most one per attempt; an operation
    // executed twice had a vanished attempt (the effect landed, the kill came before the outcome).
    let calls = rig.scalar("SELECT CAST(sum(calls) AS BIGINT) FROM demo_effects");
    assert!(
        (OPS..=attempts).contains(&calls),
        "{calls} calls for {attempts} attempts"
    );
    let unexplained = rig.scalar(
        "SELECT count(*) FROM operations o JOIN demo_effects e ON e.effect_key = o.remote_id \
         WHERE e.calls > o.attempt",
    );
    assert_eq!(
        unexplained, 0,
        "an effect executed more often than attempted"
    );
    rig.report(&format!(
        "2 SIGKILLs (holding {held_at_kill:?} claims), {OPS} operations, {OPS} succeeded, lost 0, \
         {effects} effect rows (duplicates 0), {attempts} attempts = {succeeded} succeeded + \
         {vanished} vanished, {} re-executions after a vanished attempt",
        calls - OPS
    ));
}

/// The effect row for `id` (its effect key is `oprec-<id>`): (calls, applied_at); (0, "") when
/// there is none.
fn effect_of(rig: &Rig, id: &str) -> (i64, String) {
    let rows = rig.counts(&format!(
        "SELECT COALESCE(applied_at, ''), CAST(calls AS BIGINT) FROM demo_effects \
         WHERE effect_key = 'oprec-{id}'"
    ));
    match rows.as_slice() {
        [] => (0, String::new()),
        [(at, calls)] => (*calls, at.clone()),
        more => panic!("{} effect rows for {id}: {more:?}", more.len()),
    }
}

/// Scenario 5, a worker SIGKILLed before the effect and after it: two `demo.effect` operations,
/// one pausing before its effect and one after it (before the remote id and the outcome are
/// written), both on their first attempt only. The worker is killed once both attempts sit in
/// their pauses (the second one's effect row visible); a second worker retries both. Nothing is
/// lost; each operation has exactly one effect row, the one made before the kill keeps its first
/// time; the handler ran twice for the second (at-least-once attempts), once for the first.
fn sigkill_around_the_effect(kind: RigKind) {
    let rig = Rig::new(kind, "sigkill_around_the_effect");
    let before = rig.enqueue(
        "demo.effect",
        r#"{"sleep_before_ms": 120000, "sleep_attempts": 1}"#,
    );
    let after = rig.enqueue(
        "demo.effect",
        r#"{"sleep_after_ms": 120000, "sleep_attempts": 1}"#,
    );
    let mut first = rig.worker("pf-first", &["--lease", "2s", "--concurrency", "2"]);
    first.wait_until_up();
    // Both claimed, the second's effect made: both attempts are in their pauses.
    let paused = poll(Duration::from_secs(30), Duration::from_millis(20), || {
        let effect = effect_of(&rig, &after);
        (rig.running() == 2 && effect.0 == 1).then_some(effect)
    });
    let Some((_, applied_at)) = paused else {
        panic!(
            "the attempts never reached their pauses: {:?}",
            rig.statuses()
        );
    };
    assert_eq!(effect_of(&rig, &before).0, 0, "paused before the effect");
    assert_eq!(first.sigkill().signal(), Some(SIGKILL));
    assert_eq!(rig.running(), 2, "no outcome was written: still running");

    let mut second = rig.worker("pf-second", &["--lease", "2s", "--exit-when-idle"]);
    let Some(status) = second.wait_for_exit(Duration::from_secs(60)) else {
        panic!("the second worker did not go idle");
    };
    assert!(status.success(), "{status}");
    let summary = second.stdout();
    assert!(
        summary.contains("succeeded 2") && summary.contains("vanished 2"),
        "{summary}"
    );

    for id in [&before, &after] {
        let (status, _, outcomes, workers) = rig.history(id);
        assert_eq!(status, "succeeded", "{id}");
        assert_eq!(outcomes, ["vanished", "succeeded"], "{id}");
        assert!(
            workers[0].starts_with("pf-first-") && workers[1].starts_with("pf-second-"),
            "{workers:?}"
        );
    }
    assert_eq!(rig.statuses(), [("succeeded".to_owned(), 2)]);
    // One effect per operation, under the effect key the operation records as its remote id.
    let effects = rig.scalar("SELECT count(*) FROM demo_effects");
    let matched = rig.scalar(
        "SELECT count(*) FROM operations o JOIN demo_effects e ON e.effect_key = o.remote_id",
    );
    assert_eq!((effects, matched), (2, 2), "one effect row per operation");
    // Killed before the effect: the retry made it, once.
    assert_eq!(effect_of(&rig, &before).0, 1);
    // Killed after the effect: the retry ran the handler again, and the effect key kept it one
    // effect, the one made before the kill.
    let (calls, at) = effect_of(&rig, &after);
    assert_eq!(calls, 2, "the retried handler ran again");
    assert_eq!(at, applied_at, "the effect is still the first one");
    rig.report(
        "1 SIGKILL (cutting 2 attempts: 1 before its effect, 1 after it), 2 operations, \
         2 succeeded, lost 0, 2 effect rows (duplicates 0), 2 vanished attempts, \
         1 re-execution absorbed by the effect key",
    );
}

/// Scenario 6, a zombie worker: it claims two operations (lease 2 s) and is SIGSTOPped a second
/// later, with both handlers started: a `demo.slow` of 4 s and a `demo.effect` pausing 120 s before its effect on the first attempt.
/// A second worker's rescuer records both attempts vanished, and it runs both to success. Then
/// the zombie gets SIGCONT: its slow handler has finished, so it sends a completion, and its
/// other attempt heartbeats. Both are refused as stale claims, reported in its log (with the
/// operation's id) and in its summary, and the two operations, their histories and the effect
/// are exactly as they were before the zombie woke.
fn zombie_worker(kind: RigKind) {
    let rig = Rig::new(kind, "zombie_worker");
    let slow = rig.enqueue("demo.slow", r#"{"ms": 4000}"#);
    let effect = rig.enqueue(
        "demo.effect",
        r#"{"sleep_before_ms": 120000, "sleep_attempts": 1}"#,
    );
    let mut zombie = rig.worker("pf-zombie", &["--lease", "2s", "--concurrency", "2"]);
    let claimed = poll(Duration::from_secs(30), Duration::from_millis(20), || {
        let n = rig.scalar(
            "SELECT count(*) FROM operations WHERE status = 'running' AND worker_id LIKE 'pf-zombie-%'",
        );
        (n == 2).then_some(())
    });
    assert!(claimed.is_some(), "the zombie never claimed both");
    // Let both handlers start (a claim committed is not yet a handler running), well within the
    // slow one's 4 s.
    std::thread::sleep(Duration::from_secs(1));
    zombie.signal("STOP");
    let stopped = Instant::now();

    let mut other = rig.worker("pf-other", &["--lease", "2s", "--exit-when-idle"]);
    let Some(status) = other.wait_for_exit(Duration::from_secs(60)) else {
        panic!("the second worker did not go idle");
    };
    assert!(status.success(), "{status}");
    assert!(
        other.stdout().contains("succeeded 2") && other.stdout().contains("vanished 2"),
        "{}",
        other.stdout()
    );
    // The second worker took at least the lease (2 s) and the slow handler (4 s): the zombie's
    // slow handler is done by the time it wakes.
    assert!(
        stopped.elapsed() > Duration::from_secs(5),
        "the zombie slept past its lease and its slow handler"
    );
    let snapshot = |id: &str| rig.oprec_json(&["ops", "show", id, "--json"]);
    let before = (snapshot(&slow), snapshot(&effect), effect_of(&rig, &effect));
    for id in [&slow, &effect] {
        let (status, _, outcomes, workers) = rig.history(id);
        assert_eq!(status, "succeeded", "{id}");
        assert_eq!(outcomes, ["vanished", "succeeded"], "{id}");
        assert!(
            workers[0].starts_with("pf-zombie-") && workers[1].starts_with("pf-other-"),
            "{workers:?}"
        );
    }

    zombie.signal("CONT");
    // The stale completion (the slow operation) and the stale heartbeat (the paused one), each
    // logged with its operation's id.
    let reported = poll(Duration::from_secs(30), Duration::from_millis(50), || {
        let log = zombie.stderr();
        let stale: Vec<&str> = log.lines().filter(|l| l.contains("stale claim")).collect();
        let completion = stale
            .iter()
            .any(|l| l.contains(&slow) && l.contains("this outcome changed nothing"));
        let heartbeat = stale
            .iter()
            .any(|l| l.contains(&effect) && l.contains("abandoning the attempt"));
        (completion && heartbeat).then_some(())
    });
    assert!(
        reported.is_some(),
        "stale claims not reported: {}",
        zombie.stderr()
    );
    zombie.sigterm();
    let Some(status) = zombie.wait_for_exit(Duration::from_secs(30)) else {
        panic!("the zombie did not stop after SIGTERM");
    };
    assert!(status.success(), "{status}");
    assert!(
        zombie.stdout().contains("stale claims 2"),
        "{}",
        zombie.stdout()
    );
    // Changed nothing: the rows, their histories and the effect are as they were.
    let after = (snapshot(&slow), snapshot(&effect), effect_of(&rig, &effect));
    assert_eq!(before, after, "the zombie changed something");
    assert_eq!(after.2.0, 1, "the zombie never reached the effect");
    assert_eq!(rig.running(), 0);
    rig.report(
        "1 SIGSTOP past the lease then SIGCONT, 2 operations, 2 succeeded, lost 0, \
         duplicate effects 0, 2 vanished attempts, 2 stale claims reported (1 completion, \
         1 heartbeat), nothing changed",
    );
}

/// Runs each scenario on every rig, as `scenario::rig`.
macro_rules! on_every_rig {
    ($($scenario:ident),* $(,)?) => {$(
        mod $scenario {
            #[test]
            fn postgres_redis() {
                super::$scenario(super::RigKind::PostgresRedis);
            }
            #[test]
            fn postgres_amqp() {
                super::$scenario(super::RigKind::PostgresAmqp);
            }
            #[test]
            fn sqlite_poll() {
                super::$scenario(super::RigKind::SqlitePoll);
            }
        }
    )*};
}

on_every_rig!(
    sigkill_mid_handler,
    crash_loop,
    sigterm_drains,
    kills_during_a_run,
    sigkill_around_the_effect,
    zombie_worker
);
