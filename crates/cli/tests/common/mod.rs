//! Running the `oprec` binary against a fresh SQLite file per test.

#![allow(dead_code)]

use std::io::Write;
use std::process::{Command, Output, Stdio};

/// A temporary folder with its own database, and the binary pointed at it.
pub struct Oprec {
    dir: tempfile::TempDir,
    pub url: String,
}

/// What one run printed and how it exited.
#[derive(Debug)]
pub struct Run {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    fn from(out: Output) -> Self {
        Run {
            code: out.status.code(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    /// Asserts exit 0 and returns standard output.
    pub fn ok(&self) -> &str {
        assert_eq!(self.code, Some(0), "expected success: {self:#?}");
        &self.stdout
    }

    /// Standard output as JSON, after asserting exit 0.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(self.ok())
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.stdout))
    }

    /// Asserts exit 2 with a one-line message on stderr containing `needle`, and no panic.
    pub fn bad_input(&self, needle: &str) {
        assert_eq!(self.code, Some(2), "expected exit 2: {self:#?}");
        let err = self.stderr.trim_end();
        assert!(err.contains(needle), "stderr lacks {needle:?}: {err}");
        assert_eq!(err.lines().count(), 1, "not one line: {err}");
        assert!(
            !err.contains("panicked") && !err.contains("backtrace"),
            "{err}"
        );
    }
}

/// The binary with a clean environment: no inherited oprec settings or log filter.
pub fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_oprec"));
    c.env_remove("OPREC_DATABASE_URL")
        .env_remove("OPREC_TRANSPORT_URL")
        .env_remove("OPREC_ACTOR")
        .env_remove("OPREC_CODE_VERSION")
        .env_remove("RUST_LOG")
        .env_remove("OPREC_LOG_FORMAT")
        .env_remove("TRACEPARENT")
        .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
        .env_remove("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        // A width a shell exported would cut the tables the tests read; a test that wants a
        // width sets it.
        .env_remove("COLUMNS")
        .env("RUST_BACKTRACE", "1");
    c
}

impl Oprec {
    /// A fresh folder and database URL (not migrated).
    pub fn new() -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let url = format!(
            "sqlite://{}?mode=rwc",
            dir.path().join("oprec.db").display()
        );
        Oprec { dir, url }
    }

    /// A fresh folder, with the binary pointed at `url` (another database, e.g. PostgreSQL).
    pub fn with_url(url: impl Into<String>) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        Oprec {
            dir,
            url: url.into(),
        }
    }

    /// A fresh, migrated database.
    pub fn migrated() -> Self {
        let o = Self::new();
        o.run(&["migrate"]).ok();
        o
    }

    /// The folder, for files a test writes.
    pub fn path(&self, name: &str) -> std::path::PathBuf {
        self.dir.path().join(name)
    }

    /// The binary, working in the folder, with the database in the environment.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut c = bin();
        c.current_dir(self.dir.path())
            .env("OPREC_DATABASE_URL", &self.url)
            .args(args);
        c
    }

    /// Runs with no standard input.
    pub fn run(&self, args: &[&str]) -> Run {
        let out = self
            .command(args)
            .stdin(Stdio::null())
            .output()
            .expect("run oprec");
        Run::from(out)
    }

    /// Runs with no standard input and the environment changed: `Some` sets, `None` removes.
    pub fn run_with_env(&self, args: &[&str], env: &[(&str, Option<&str>)]) -> Run {
        let mut c = self.command(args);
        for (name, value) in env {
            match value {
                Some(v) => c.env(name, v),
                None => c.env_remove(name),
            };
        }
        Run::from(c.stdin(Stdio::null()).output().expect("run oprec"))
    }

    /// Runs with `input` on standard input.
    pub fn run_with_stdin(&self, args: &[&str], input: &str) -> Run {
        let mut child = self
            .command(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn oprec");
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(input.as_bytes())
            .expect("write stdin");
        Run::from(child.wait_with_output().expect("wait"))
    }

    /// Makes `n` dead `demo.flaky` operations: transient failures, one attempt allowed, worked
    /// poll-only until idle.
    pub fn dead_flaky(&self, n: u32) {
        self.run(&[
            "enqueue",
            "--kind",
            "demo.flaky",
            "--payload",
            r#"{"fail_times": 99, "class": "transient"}"#,
            "--count",
            &n.to_string(),
        ])
        .ok();
        self.run(&[
            "--transport",
            "poll",
            "worker",
            "--demo",
            "--demo-max-attempts",
            "1",
            "--concurrency",
            "64",
            "--exit-when-idle",
        ])
        .ok();
    }

    /// Enqueues one operation and returns its id.
    pub fn enqueue(&self, kind: &str, payload: &str) -> String {
        let v = self
            .run(&["enqueue", "--kind", kind, "--payload", payload, "--json"])
            .json();
        v["id"].as_str().expect("id").to_owned()
    }

    /// Works everything eligible with the demo kinds, poll-only, until idle; fails the test if
    /// the worker does not exit 0. Returns what it printed.
    pub fn work_until_idle(&self) -> String {
        self.run(&[
            "--transport",
            "poll",
            "worker",
            "--demo",
            "--exit-when-idle",
        ])
        .ok()
        .to_owned()
    }

    /// `ops show ID --json`.
    pub fn show(&self, id: &str) -> serde_json::Value {
        self.run(&["ops", "show", id, "--json"]).json()
    }
}

/// Deletes a Redis key (a stream with its groups, a list) when dropped, whether the test passed or
/// failed. Best effort and bounded: a Redis that is gone by then costs two seconds, never a hang.
pub struct RedisKeyGuard {
    pub url: String,
    pub key: String,
}

impl Drop for RedisKeyGuard {
    fn drop(&mut self) {
        let Ok(client) = redis::Client::open(self.url.as_str()) else {
            return;
        };
        if let Ok(mut conn) = client.get_connection_with_timeout(std::time::Duration::from_secs(2))
        {
            let _ = conn.set_read_timeout(Some(std::time::Duration::from_secs(2)));
            let _ = redis::cmd("DEL").arg(&self.key).exec(&mut conn);
        }
    }
}

/// Deletes every key of a Redis key prefix when dropped, whether the test passed or failed (see
/// [`delete_redis_prefix`]).
pub struct RedisPrefixGuard {
    pub url: String,
    pub prefix: String,
}

impl Drop for RedisPrefixGuard {
    fn drop(&mut self) {
        delete_redis_prefix(&self.url, &self.prefix);
    }
}

/// Deletes a RabbitMQ queue when dropped, whether the test passed or failed (see
/// [`delete_amqp_queue`]).
pub struct AmqpQueueGuard {
    pub url: String,
    pub queue: String,
}

impl Drop for AmqpQueueGuard {
    fn drop(&mut self) {
        delete_amqp_queue(&self.url, &self.queue);
    }
}

/// Deletes a RabbitMQ queue, consumers or not (see [`amqp_delete`]).
pub fn delete_amqp_queue(url: &str, queue: &str) {
    amqp_delete(url, AmqpThing::Queue(queue.to_owned()));
}

/// What [`amqp_delete`] deletes.
enum AmqpThing {
    Queue(String),
    Exchange(String),
}

/// Deletes a RabbitMQ queue or exchange on a thread and runtime of its own (this may run on a
/// runtime's thread, where blocking on another runtime is refused). Best effort and bounded
/// (5 s): a broker that is gone by then costs that long, never a hang or a second panic.
/// The type of the RabbitMQ queue `queue` ("quorum" or "classic"), as the broker states it when
/// the queue is declared again as a classic queue (with the rig's expiry of 120 s, so that the
/// type is the only argument that can differ).
pub fn amqp_queue_type(url: &str, queue: &str) -> String {
    use lapin::options::QueueDeclareOptions;
    use lapin::types::{AMQPValue, FieldTable, LongString};
    use lapin::{Connection, ConnectionProperties};
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let conn = Connection::connect(url, ConnectionProperties::default())
            .await
            .expect("connect to RabbitMQ");
        let channel = conn.create_channel().await.expect("channel");
        let mut classic = FieldTable::default();
        classic.insert(
            "x-queue-type".into(),
            AMQPValue::LongString(LongString::from("classic")),
        );
        classic.insert("x-expires".into(), AMQPValue::LongLongInt(120_000));
        let declared = channel
            .queue_declare(
                queue.into(),
                QueueDeclareOptions {
                    durable: true,
                    ..QueueDeclareOptions::default()
                },
                classic,
            )
            .await;
        match declared {
            Ok(_) => "classic".to_owned(),
            Err(e) if e.to_string().contains("current is 'quorum'") => "quorum".to_owned(),
            Err(e) => panic!("declaring {queue} again failed: {e}"),
        }
    })
}

fn amqp_delete(url: &str, thing: AmqpThing) {
    use lapin::options::{ExchangeDeleteOptions, QueueDeleteOptions};
    use lapin::{Connection, ConnectionProperties};
    let url = url.to_owned();
    let _ = std::thread::spawn(move || {
        let Ok(rt) = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        else {
            return;
        };
        rt.block_on(async {
            let _ = tokio::time::timeout(std::time::Duration::from_secs(5), async {
                let conn = Connection::connect(&url, ConnectionProperties::default())
                    .await
                    .ok()?;
                let channel = conn.create_channel().await.ok()?;
                let _ = match &thing {
                    AmqpThing::Queue(q) => channel
                        .queue_delete(q.as_str().into(), QueueDeleteOptions::default())
                        .await
                        .map(|_| ()),
                    AmqpThing::Exchange(e) => {
                        channel
                            .exchange_delete(e.as_str().into(), ExchangeDeleteOptions::default())
                            .await
                    }
                };
                let _ = conn.close(200, "OK".into()).await;
                Some(())
            })
            .await;
        });
    })
    .join();
}

/// The demo kinds, whose queues a RabbitMQ prefix of the tests may hold.
pub const DEMO_KINDS: [&str; 5] = [
    "demo.noop",
    "demo.flaky",
    "demo.crash",
    "demo.slow",
    "demo.effect",
];

/// Deletes every key of a Redis key prefix (`{prefix}:*`: each kind's stream and the set of
/// kinds). Best effort and bounded: a Redis that is gone costs two seconds, never a hang.
pub fn delete_redis_prefix(url: &str, prefix: &str) {
    let Ok(client) = redis::Client::open(url) else {
        return;
    };
    if let Ok(mut conn) = client.get_connection_with_timeout(std::time::Duration::from_secs(2)) {
        let _ = conn.set_read_timeout(Some(std::time::Duration::from_secs(2)));
        let keys: Vec<String> = redis::cmd("KEYS")
            .arg(format!("{{{prefix}}}:*"))
            .query(&mut conn)
            .unwrap_or_default();
        for key in keys {
            let _ = redis::cmd("DEL").arg(key).exec(&mut conn);
        }
    }
}

/// Deletes a RabbitMQ prefix's queues of the demo kinds and its exchange.
pub fn delete_amqp_prefix(url: &str, prefix: &str) {
    for kind in DEMO_KINDS {
        delete_amqp_queue(url, &format!("{prefix}.{kind}"));
    }
    delete_amqp_exchange(url, prefix);
}

/// Deletes a RabbitMQ exchange (see [`amqp_delete`]).
pub fn delete_amqp_exchange(url: &str, exchange: &str) {
    amqp_delete(url, AmqpThing::Exchange(exchange.to_owned()));
}

/// A port nobody listens on right now.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `GET /metrics` over a plain TCP connection; `None` while nothing answers.
pub fn scrape(port: u16) -> Option<String> {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(std::time::Duration::from_secs(5)))
        .ok()?;
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        .ok()?;
    let mut text = String::new();
    std::io::Read::read_to_string(&mut s, &mut text).ok()?;
    text.starts_with("HTTP/1.1 200").then_some(text)
}

/// The value of the first sample line starting with `series` (name and labels).
pub fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find(|l| l.starts_with(series) && l[series.len()..].starts_with(' '))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
}
