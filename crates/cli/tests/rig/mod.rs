//! A rig for fault tests that run the real `oprec` binary as separate processes: a fresh
//! PostgreSQL schema (named through `?options=-csearch_path%3D...` on the URL the binary gets) or
//! SQLite file, a fresh Redis key prefix (`?prefix=`) or RabbitMQ prefix (`?prefix=`), the test's own
//! pool for assertions, and every child process killed when its guard drops, with the tail of
//! every log printed when the test fails. The stream or queue is deleted when the rig drops,
//! passed or failed; the schema or folder only when the test passed (kept for inspection).
//!
//! The servers are the shared ones (`OPREC_TEST_DATABASE_URL`, `OPREC_TEST_REDIS_URL`,
//! `OPREC_TEST_AMQP_URL`) unless a test names its own ([`Servers`]), e.g. the private instances of
//! `oprec_testkit::services` that it restarts.

#![allow(dead_code)]

use std::cell::RefCell;
use std::fs::File;
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use sqlx::postgres::{PgPool, PgPoolOptions};
use sqlx::sqlite::{SqlitePool, SqlitePoolOptions};
use sqlx::{AssertSqlSafe, Row};

use crate::common;

/// SIGKILL and SIGABRT, as `ExitStatus::signal` reports them.
pub const SIGKILL: i32 = 9;
pub const SIGABRT: i32 = 6;

pub fn env_or(name: &str, default: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| default.to_owned())
}

/// `url` with `param` appended to its query.
pub fn with_param(url: &str, param: &str) -> String {
    let sep = if url.contains('?') { '&' } else { '?' };
    format!("{url}{sep}{param}")
}

/// The Redis URL, on logical database 9 unless the URL names one (as `tests/broker.rs`).
pub fn redis_url() -> String {
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
pub fn poll<T>(
    limit: Duration,
    every: Duration,
    mut probe: impl FnMut() -> Option<T>,
) -> Option<T> {
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
pub enum RigKind {
    PostgresRedis,
    PostgresAmqp,
    /// PostgreSQL with no broker: workers claim from the store.
    PostgresPoll,
    SqlitePoll,
}

/// The test's own pool on the rig's database, for what the binary does not show in bulk.
pub enum Pool {
    Pg(PgPool),
    Sqlite(SqlitePool),
}

/// A fresh database and broker destination for one test, the URLs the binary gets for them, and
/// the log files of every process the test started.
/// The servers a rig uses: PostgreSQL (for the PostgreSQL rigs) and the broker (Redis or
/// RabbitMQ, by the rig's kind), as URLs without a database, stream or queue.
#[derive(Clone, Debug)]
pub struct Servers {
    pub postgres: String,
    pub redis: String,
    pub amqp: String,
}

impl Servers {
    /// The shared services, from the environment (Redis on logical database 9).
    pub fn shared() -> Servers {
        Servers {
            postgres: env_or(
                "OPREC_TEST_DATABASE_URL",
                "postgres://postgres@127.0.0.1:5432/test",
            ),
            redis: redis_url(),
            amqp: env_or(
                "OPREC_TEST_AMQP_URL",
                "amqp://guest:guest@127.0.0.1:5672/%2f",
            ),
        }
    }
}

pub struct Rig {
    pub kind: RigKind,
    pub name: String,
    pub dir: Option<tempfile::TempDir>,
    pub db: String,
    pub transport: String,
    pub rt: tokio::runtime::Runtime,
    pub pool: Option<Pool>,
    /// PostgreSQL: the server URL and the schema to drop at the end.
    pub schema: Option<(String, String)>,
    /// Redis: the server URL and the key prefix whose keys (every kind's stream, the set of
    /// kinds) are deleted at the end.
    pub stream: Option<(String, String)>,
    /// RabbitMQ: the server URL and the prefix whose exchange and demo kind queues are deleted at
    /// the end.
    pub queue: Option<(String, String)>,
    pub logs: RefCell<Vec<(String, PathBuf, PathBuf)>>,
    pub started: Instant,
}

impl Rig {
    /// A migrated, empty rig; fails loudly when a service is missing.
    pub fn new(kind: RigKind, test: &str) -> Rig {
        Rig::on(kind, test, Servers::shared())
    }

    /// A migrated, empty rig on `servers`.
    pub fn on(kind: RigKind, test: &str, servers: Servers) -> Rig {
        let tag = oprec_testkit::services::unique_tag("rig");
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
            RigKind::PostgresRedis | RigKind::PostgresAmqp | RigKind::PostgresPoll => {
                let server = servers.postgres.clone();
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
        let (transport, stream, queue) = match kind {
            RigKind::SqlitePoll | RigKind::PostgresPoll => ("poll".to_owned(), None, None),
            RigKind::PostgresRedis => {
                let server = servers.redis.clone();
                let key = format!("oprec:pf:{tag}");
                (
                    with_param(&server, &format!("prefix={key}&group=oprec-pf")),
                    Some((server, key)),
                    None,
                )
            }
            RigKind::PostgresAmqp => {
                let server = servers.amqp.clone();
                let queue = format!("oprec.pf.{tag}");
                // Deleted when the rig drops; the expiry only covers a test process that died.
                (
                    with_param(&server, &format!("prefix={queue}&queue_expires=120")),
                    None,
                    Some((server, queue)),
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
            queue,
            logs: RefCell::default(),
            started: Instant::now(),
        };
        rig.oprec_ok(&["migrate"]);
        if !matches!(kind, RigKind::SqlitePoll | RigKind::PostgresPoll) {
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

    /// The transport URL the binary gets (with the rig's prefix).
    pub fn transport_url(&self) -> &str {
        &self.transport
    }

    pub fn dir(&self) -> &std::path::Path {
        self.dir.as_ref().expect("dir").path()
    }

    /// The binary, pointed at this rig, its output going to log files named after `name`.
    pub fn spawn(&self, name: &str, args: &[&str]) -> Proc {
        self.spawn_with_env(name, args, &[])
    }

    /// [`Rig::spawn`] with `env` set in the process's environment as well.
    pub fn spawn_with_env(&self, name: &str, args: &[&str], env: &[(&str, &str)]) -> Proc {
        let n = self.logs.borrow().len();
        let out = self.dir().join(format!("{n:02}-{name}.out"));
        let err = self.dir().join(format!("{n:02}-{name}.err"));
        let child = common::bin()
            .current_dir(self.dir())
            .env("OPREC_DATABASE_URL", &self.db)
            .env("OPREC_TRANSPORT_URL", &self.transport)
            // The worker id is "$HOSTNAME-$PID": lets the test tell its workers' claims apart.
            .env("HOSTNAME", name)
            // Its PostgreSQL sessions carry the name too (sqlx reads `PGAPPNAME`), so a test can
            // wait until a killed process's sessions have ended.
            .env("PGAPPNAME", name)
            .envs(env.iter().copied())
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
    pub fn worker(&self, name: &str, extra: &[&str]) -> Proc {
        let args = [&["worker", "--demo", "--rewake-after", "1s"][..], extra].concat();
        self.spawn(name, &args)
    }

    /// Runs a command to its end (30 s at most): exit status, stdout, stderr.
    pub fn oprec(&self, args: &[&str]) -> (ExitStatus, String, String) {
        let mut p = self.spawn("cmd", args);
        let Some(status) = p.wait_for_exit(Duration::from_secs(30)) else {
            panic!("oprec {} did not finish in 30 s", args.join(" "));
        };
        (status, p.stdout(), p.stderr())
    }

    /// Runs a command that must succeed; its stdout.
    pub fn oprec_ok(&self, args: &[&str]) -> String {
        let (status, out, err) = self.oprec(args);
        assert!(
            status.success(),
            "oprec {} failed ({status}): {err}",
            args.join(" ")
        );
        out
    }

    /// A command's stdout as JSON.
    pub fn oprec_json(&self, args: &[&str]) -> Value {
        let out = self.oprec_ok(args);
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("not JSON ({e}): {out}"))
    }

    /// `oprec ops show ID --json`: (status, terminal reason, attempt outcomes, attempt workers).
    pub fn history(&self, id: &str) -> (String, Option<String>, Vec<String>, Vec<String>) {
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
    pub fn enqueue(&self, kind: &str, payload: &str) -> String {
        let v = self.oprec_json(&["enqueue", "--kind", kind, "--payload", payload, "--json"]);
        v["id"].as_str().expect("id").to_owned()
    }

    /// Enqueues `count` operations of `kind` with the same payload, checking that all were
    /// created.
    pub fn enqueue_count(&self, kind: &str, payload: &str, count: i64) {
        if let Err(err) = self.try_enqueue_count(kind, payload, count) {
            panic!("oprec enqueue --kind {kind} --count {count} failed: {err}");
        }
    }

    /// One try at [`Rig::enqueue_count`]: `Err` with the command's stderr when it failed, so that
    /// the caller can decide whether to try again.
    pub fn try_enqueue_count(&self, kind: &str, payload: &str, count: i64) -> Result<(), String> {
        let count_arg = count.to_string();
        let args = [
            "enqueue",
            "--kind",
            kind,
            "--payload",
            payload,
            "--count",
            &count_arg,
            "--json",
        ];
        let (status, out, err) = self.oprec(&args);
        if !status.success() {
            return Err(err);
        }
        let v: Value =
            serde_json::from_str(&out).unwrap_or_else(|e| panic!("not JSON ({e}): {out}"));
        assert_eq!(v["created"], count, "{v}");
        Ok(())
    }

    /// One integer from the test's own pool.
    pub fn scalar(&self, sql: &str) -> i64 {
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
    pub fn counts(&self, sql: &str) -> Vec<(String, i64)> {
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
    pub fn statuses(&self) -> Vec<(String, i64)> {
        self.counts("SELECT status, count(*) FROM operations GROUP BY status ORDER BY status")
    }

    pub fn running(&self) -> i64 {
        self.scalar("SELECT count(*) FROM operations WHERE status = 'running'")
    }

    /// The tail of every process's output, for failure messages.
    pub fn dump(&self) -> String {
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
    pub fn report(&self, what: &str) {
        eprintln!(
            "[{}] {} {:?}: {what}; {:.1} s",
            env!("CARGO_CRATE_NAME"),
            self.name,
            self.kind,
            self.started.elapsed().as_secs_f64()
        );
    }
}

impl Drop for Rig {
    fn drop(&mut self) {
        let failed = std::thread::panicking();
        // The broker's stream or queue goes whether the test passed or failed: the logs and the
        // database tell what happened, and a leftover would stay on the shared broker for good.
        if let Some((server, prefix)) = self.stream.take() {
            common::delete_redis_prefix(&server, &prefix);
        }
        if let Some((server, prefix)) = self.queue.take() {
            common::delete_amqp_prefix(&server, &prefix);
        }
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
    }
}

/// A pool on the PostgreSQL server itself (for creating and dropping schemas).
pub async fn admin_pool(server: &str) -> PgPool {
    PgPoolOptions::new()
        .max_connections(1)
        .acquire_timeout(Duration::from_secs(10))
        .connect(server)
        .await
        .unwrap_or_else(|e| {
            panic!("PostgreSQL (OPREC_TEST_DATABASE_URL) is required: {e}");
        })
}

/// A child process, killed (SIGKILL) and reaped when dropped.
pub struct Proc {
    pub name: String,
    pub child: Child,
    pub out: PathBuf,
    pub err: PathBuf,
}

impl Proc {
    /// Kills with SIGKILL and reaps; the exit status.
    pub fn sigkill(&mut self) -> ExitStatus {
        let _ = self.child.kill();
        self.child.wait().expect("reap")
    }

    /// Sends SIGTERM.
    pub fn sigterm(&self) {
        self.signal("TERM");
    }

    /// Sends the signal `name` (`TERM`, `STOP`, `CONT`).
    pub fn signal(&self, name: &str) {
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
    pub fn wait_for_exit(&mut self, limit: Duration) -> Option<ExitStatus> {
        poll(limit, Duration::from_millis(20), || {
            self.child.try_wait().expect("try_wait")
        })
    }

    /// Waits (15 s at most) for the worker's start-up line: its store is open, its tables made.
    pub fn wait_until_up(&mut self) {
        let up = poll(Duration::from_secs(15), Duration::from_millis(20), || {
            self.stderr().contains(": running ").then_some(())
        });
        assert!(
            up.is_some(),
            "{} did not start within 15 s (exit: {:?})\n{}",
            self.name,
            self.child.try_wait().ok().flatten(),
            self.stderr()
        );
    }

    pub fn stdout(&self) -> String {
        std::fs::read_to_string(&self.out).unwrap_or_default()
    }

    pub fn stderr(&self) -> String {
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

/// The effect row for `id` (its effect key is `oprec-<id>`): (calls, applied_at); (0, "") when
/// there is none.
pub fn effect_of(rig: &Rig, id: &str) -> (i64, String) {
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
