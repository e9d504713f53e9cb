//! Private service instances for fault tests: a PostgreSQL cluster, a Redis server and a RabbitMQ
//! node of the test's own, on free ports under a temporary folder, which a test may stop, restart
//! or kill without touching the shared services on 5432, 6379 and 5672 that other tests use.
//!
//! Each is built from an options builder (extra settings, files such as TLS certificates written
//! into its folder before the start), started with `start()`, and stopped (and its folder
//! removed) when dropped. A missing server binary panics with the package to install: a fault
//! test never skips. When the tests run as root, PostgreSQL runs as the `postgres` user (initdb
//! refuses root) and RabbitMQ as the `rabbitmq` user (for the Erlang cookie its CLI shares).
//!
//! Not for production code: every failure panics, by design.

use std::fs;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// How long a server may take to come up on a loaded machine.
const START_LIMIT: Duration = Duration::from_secs(120);

/// A port nobody listens on now (the kernel's choice; another process could take it before the
/// server binds it, which the start then reports).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("bind 127.0.0.1:0 for a free port")
}

/// Is something accepting TCP connections on 127.0.0.1:`port`?
pub fn port_open(port: u16) -> bool {
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    TcpStream::connect_timeout(&addr, Duration::from_millis(500)).is_ok()
}

/// A name for a folder, node, schema or queue that no other test (in this run or an earlier
/// one) uses: `{prefix}_{pid}_{nanos}_{n}`.
pub fn unique_tag(prefix: &str) -> String {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!(
        "{prefix}_{}_{nanos:x}_{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

fn running_as_root() -> bool {
    fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0)
}

/// The uid and gid of the OS user `name`, from `id`.
fn user_ids(name: &str) -> (u32, u32) {
    let id = |flag: &str| -> u32 {
        let out = Command::new("id")
            .args([flag, name])
            .output()
            .unwrap_or_else(|e| panic!("id {flag} {name}: {e}"));
        assert!(
            out.status.success(),
            "the OS user {name} does not exist (its server package creates it)"
        );
        String::from_utf8_lossy(&out.stdout)
            .trim()
            .parse()
            .unwrap_or_else(|e| panic!("id {flag} {name}: {e}"))
    };
    (id("-u"), id("-g"))
}

/// A folder under the system's temporary folder, owned by `owner` when we are root.
fn service_dir(tag: &str, owner: Option<&str>) -> PathBuf {
    let dir = std::env::temp_dir().join(tag);
    fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("create {}: {e}", dir.display()));
    if let Some(user) = owner {
        chown_to(&dir, user);
    }
    dir
}

fn chown_to(path: &Path, user: &str) {
    let (uid, gid) = user_ids(user);
    std::os::unix::fs::chown(path, Some(uid), Some(gid))
        .unwrap_or_else(|e| panic!("chown {} to {user}: {e}", path.display()));
}

/// Writes `contents` to `path`, owned by `owner` when given.
fn write_file(path: &Path, contents: &[u8], owner: Option<&str>) {
    fs::write(path, contents).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
    if let Some(user) = owner {
        chown_to(path, user);
    }
}

/// `program` with `args`, run as `user` (through `runuser`) when we are root.
fn command_as(user: Option<&str>, program: &Path, args: &[&str]) -> Command {
    match user {
        Some(u) => {
            let mut c = Command::new("runuser");
            c.args(["-u", u, "--"]).arg(program).args(args);
            c
        }
        None => {
            let mut c = Command::new(program);
            c.args(args);
            c
        }
    }
}

/// Runs `command` to its end; panics with its output when it fails.
fn run_ok(what: &str, command: &mut Command) -> String {
    let out = command
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("{what}: could not run: {e}"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "{what} failed ({}): {text}",
        out.status
    );
    text
}

/// Waits until `ready` answers true, or panics after `limit` with `what` and `log`'s tail.
fn wait_until(what: &str, limit: Duration, log: &Path, mut ready: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !ready() {
        if Instant::now() >= deadline {
            panic!(
                "{what} did not come up in {limit:?}; the end of {}:\n{}",
                log.display(),
                tail(log, 30)
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The last `n` lines of a file, for failure messages.
pub fn tail(path: &Path, n: usize) -> String {
    let text = fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

// ------------------------------------------------------------------------------------------------
// PostgreSQL

/// How to build a [`PrivatePostgres`].
#[derive(Clone, Debug, Default)]
pub struct PostgresOptions {
    settings: Vec<(String, String)>,
    hba: Vec<String>,
    files: Vec<(String, Vec<u8>, u32)>,
}

impl PostgresOptions {
    /// A `postgresql.conf` setting (`ssl`, `on`), after the defaults (which it overrides).
    pub fn setting(mut self, name: &str, value: &str) -> Self {
        self.settings.push((name.to_owned(), value.to_owned()));
        self
    }

    /// A `pg_hba.conf` line placed before the default trust lines (first match wins).
    pub fn hba_line(mut self, line: &str) -> Self {
        self.hba.push(line.to_owned());
        self
    }

    /// A file written into the data directory before the start (e.g. `server.key` with mode
    /// `0o600`), owned by the server's user.
    pub fn file(mut self, name: &str, contents: impl Into<Vec<u8>>, mode: u32) -> Self {
        self.files.push((name.to_owned(), contents.into(), mode));
        self
    }

    /// Creates the cluster (initdb) and starts it.
    pub fn start(self) -> PrivatePostgres {
        PrivatePostgres::create(self)
    }
}

/// A PostgreSQL cluster of the test's own, in a temporary folder, with trust authentication for
/// `postgres` on 127.0.0.1 and no durability (fsync off): a fault test may restart it at will.
#[derive(Debug)]
pub struct PrivatePostgres {
    bin: PathBuf,
    dir: PathBuf,
    user: Option<&'static str>,
    port: u16,
}

impl PrivatePostgres {
    /// The options, to add settings or files before the start.
    pub fn builder() -> PostgresOptions {
        PostgresOptions::default()
    }

    /// A cluster with the default options, started.
    pub fn start() -> PrivatePostgres {
        PostgresOptions::default().start()
    }

    fn create(options: PostgresOptions) -> PrivatePostgres {
        let bin = postgres_bin();
        let user = running_as_root().then_some("postgres");
        let dir = service_dir(&unique_tag("oprec_pg"), user);
        let port = free_port();
        let pg = PrivatePostgres {
            bin,
            dir,
            user,
            port,
        };
        let data = pg.data_dir();
        let data_arg = data.to_string_lossy().into_owned();
        run_ok(
            "initdb",
            &mut command_as(
                user,
                &pg.bin.join("initdb"),
                &[
                    "-D",
                    &data_arg,
                    "-U",
                    "postgres",
                    "--auth=trust",
                    "-E",
                    "UTF8",
                    "--no-sync",
                    "--no-instructions",
                ],
            ),
        );
        let mut conf = format!(
            "\n# oprec-testkit: a private cluster for fault tests\n\
             listen_addresses = '127.0.0.1'\n\
             port = {port}\n\
             unix_socket_directories = '{}'\n\
             max_connections = 200\n\
             fsync = off\n\
             synchronous_commit = off\n\
             full_page_writes = off\n\
             shared_buffers = '64MB'\n\
             logging_collector = off\n",
            pg.dir.display()
        );
        for (k, v) in &options.settings {
            conf.push_str(&format!("{k} = '{}'\n", v.replace('\'', "''")));
        }
        let conf_path = data.join("postgresql.conf");
        let mut existing = fs::read(&conf_path).expect("read postgresql.conf");
        existing.extend_from_slice(conf.as_bytes());
        write_file(&conf_path, &existing, pg.user);
        if !options.hba.is_empty() {
            let hba_path = data.join("pg_hba.conf");
            let mut hba = options.hba.join("\n").into_bytes();
            hba.push(b'\n');
            hba.extend(fs::read(&hba_path).expect("read pg_hba.conf"));
            write_file(&hba_path, &hba, pg.user);
        }
        for (name, contents, mode) in &options.files {
            let path = data.join(name);
            write_file(&path, contents, pg.user);
            fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(*mode))
                .unwrap_or_else(|e| panic!("chmod {}: {e}", path.display()));
        }
        pg.start_server();
        pg
    }

    /// The data directory, where [`PostgresOptions::file`] puts files.
    pub fn data_dir(&self) -> PathBuf {
        self.dir.join("data")
    }

    /// The server's log.
    pub fn log_path(&self) -> PathBuf {
        self.dir.join("server.log")
    }

    /// The port it listens on (127.0.0.1).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `postgres://postgres@127.0.0.1:PORT/postgres`.
    pub fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    fn pg_ctl(&self, args: &[&str]) -> Command {
        let data = self.data_dir().to_string_lossy().into_owned();
        let log = self.log_path().to_string_lossy().into_owned();
        let mut all = vec!["-D", data.as_str(), "-l", log.as_str()];
        all.extend_from_slice(args);
        command_as(self.user, &self.bin.join("pg_ctl"), &all)
    }

    fn start_server(&self) {
        if !self.log_path().exists() {
            write_file(&self.log_path(), b"", self.user);
        }
        run_ok(
            "pg_ctl start",
            &mut self.pg_ctl(&["-w", "-t", "120", "start"]),
        );
        wait_until("PostgreSQL", START_LIMIT, &self.log_path(), || {
            port_open(self.port)
        });
    }

    /// Starts the server again after [`stop`](Self::stop) or [`kill`](Self::kill).
    pub fn start_again(&self) {
        self.start_server();
    }

    /// Stops the server (fast shutdown: open sessions are ended, as on an operator's restart).
    pub fn stop(&self) {
        run_ok(
            "pg_ctl stop",
            &mut self.pg_ctl(&["-w", "-t", "60", "-m", "fast", "stop"]),
        );
    }

    /// Stops the server without a clean shutdown (immediate mode: as a crash, recovered at the
    /// next start).
    pub fn kill(&self) {
        run_ok(
            "pg_ctl stop -m immediate",
            &mut self.pg_ctl(&["-w", "-t", "60", "-m", "immediate", "stop"]),
        );
    }

    /// Stops (fast) and starts the server: every connection is cut.
    pub fn restart(&self) {
        self.stop();
        self.start_server();
    }

    /// Is the server accepting connections?
    pub fn is_up(&self) -> bool {
        port_open(self.port)
    }
}

impl Drop for PrivatePostgres {
    fn drop(&mut self) {
        let _ = self
            .pg_ctl(&["-w", "-t", "30", "-m", "immediate", "stop"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        if std::thread::panicking() {
            eprintln!(
                "private PostgreSQL kept for inspection: {}",
                self.dir.display()
            );
        } else {
            let _ = fs::remove_dir_all(&self.dir);
        }
    }
}

/// The newest PostgreSQL server's bin folder (Debian's layout), or `PG_BIN` when set.
fn postgres_bin() -> PathBuf {
    if let Ok(dir) = std::env::var("PG_BIN") {
        return PathBuf::from(dir);
    }
    let mut versions: Vec<(u32, PathBuf)> = fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let v = e.file_name().to_string_lossy().parse::<u32>().ok()?;
            let bin = e.path().join("bin");
            bin.join("initdb").exists().then_some((v, bin))
        })
        .collect();
    versions.sort();
    versions.pop().map(|(_, bin)| bin).unwrap_or_else(|| {
        panic!(
            "no PostgreSQL server binaries (initdb, pg_ctl) under /usr/lib/postgresql/<version>/bin: \
             install the `postgresql` package (apt-get install -y postgresql), or set PG_BIN"
        )
    })
}

// ------------------------------------------------------------------------------------------------
// Redis

/// How to build a [`PrivateRedis`].
#[derive(Clone, Debug, Default)]
pub struct RedisOptions {
    args: Vec<String>,
    files: Vec<(String, Vec<u8>)>,
}

impl RedisOptions {
    /// Extra `redis-server` arguments (`--tls-port`, `6391`), after the defaults.
    pub fn arg(mut self, arg: &str) -> Self {
        self.args.push(arg.to_owned());
        self
    }

    /// A file written into the server's folder before the start (see [`PrivateRedis::dir`]).
    pub fn file(mut self, name: &str, contents: impl Into<Vec<u8>>) -> Self {
        self.files.push((name.to_owned(), contents.into()));
        self
    }

    /// Starts the server.
    pub fn start(self) -> PrivateRedis {
        PrivateRedis::create(self)
    }
}

/// A `redis-server` of the test's own, a child process on a free port with no persistence:
/// [`restart`](Self::restart) loses every key, as a restart without persistence does.
#[derive(Debug)]
pub struct PrivateRedis {
    dir: PathBuf,
    port: u16,
    args: Vec<String>,
    child: Option<Child>,
    starts: u32,
}

impl PrivateRedis {
    /// The options, to add arguments or files before the start.
    pub fn builder() -> RedisOptions {
        RedisOptions::default()
    }

    /// A server with the default options, started.
    pub fn start() -> PrivateRedis {
        RedisOptions::default().start()
    }

    fn create(options: RedisOptions) -> PrivateRedis {
        let found = Command::new("redis-server")
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        assert!(
            found,
            "redis-server not found on PATH: install the `redis-server` package (apt-get install -y redis-server)"
        );
        let dir = service_dir(&unique_tag("oprec_redis"), None);
        for (name, contents) in &options.files {
            write_file(&dir.join(name), contents, None);
        }
        let mut redis = PrivateRedis {
            dir,
            port: free_port(),
            args: options.args,
            child: None,
            starts: 0,
        };
        redis.start_server();
        redis
    }

    /// The server's folder (its working directory, where [`RedisOptions::file`] puts files).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The port it listens on (127.0.0.1).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `redis://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    fn log_path(&self) -> PathBuf {
        self.dir.join(format!("server-{}.log", self.starts))
    }

    fn start_server(&mut self) {
        assert!(self.child.is_none(), "redis-server is already running");
        self.starts += 1;
        let log = self.log_path();
        let child = Command::new("redis-server")
            .current_dir(&self.dir)
            .args([
                "--port",
                &self.port.to_string(),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--daemonize",
                "no",
                "--dir",
                &self.dir.to_string_lossy(),
            ])
            .args(&self.args)
            .stdin(Stdio::null())
            .stdout(fs::File::create(&log).expect("redis log"))
            .stderr(Stdio::from(
                fs::File::options().append(true).open(&log).expect("log"),
            ))
            .spawn()
            .expect("spawn redis-server");
        self.child = Some(child);
        let port = self.port;
        wait_until("redis-server", START_LIMIT, &log, || redis_ping(port));
    }

    /// Stops the server (SIGKILL: whatever it held is gone).
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        while port_open(self.port) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Starts a fresh, empty server on the same port after [`stop`](Self::stop).
    pub fn start_again(&mut self) {
        self.start_server();
    }

    /// Kills the server and starts a fresh, empty one on the same port.
    pub fn restart(&mut self) {
        self.stop();
        self.start_server();
    }

    /// Is the server answering PING?
    pub fn is_up(&self) -> bool {
        redis_ping(self.port)
    }
}

impl Drop for PrivateRedis {
    fn drop(&mut self) {
        self.stop();
        if !std::thread::panicking() {
            let _ = fs::remove_dir_all(&self.dir);
        }
    }
}

/// Does a plain Redis on 127.0.0.1:`port` answer PING with PONG?
fn redis_ping(port: u16) -> bool {
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let Ok(mut conn) = TcpStream::connect_timeout(&addr, Duration::from_millis(500)) else {
        return false;
    };
    let _ = conn.set_read_timeout(Some(Duration::from_secs(2)));
    if conn.write_all(b"*1\r\n$4\r\nPING\r\n").is_err() {
        return false;
    }
    let mut buf = [0u8; 64];
    matches!(conn.read(&mut buf), Ok(n) if buf[..n].starts_with(b"+PONG"))
}

/// A Redis Cluster of the test's own: three `redis-server` masters on free loopback ports (each
/// with its cluster bus on another free port), no replicas, the slots spread by
/// `redis-cli --cluster create`. Killed, with their folders removed, when dropped.
#[derive(Debug)]
pub struct PrivateRedisCluster {
    nodes: Vec<PrivateRedis>,
}

impl PrivateRedisCluster {
    /// Starts three nodes, joins them into a cluster and waits until every node reports
    /// `cluster_state:ok`.
    pub fn start() -> PrivateRedisCluster {
        let nodes: Vec<PrivateRedis> = (0..3)
            .map(|_| {
                PrivateRedis::builder()
                    .arg("--cluster-enabled")
                    .arg("yes")
                    .arg("--cluster-config-file")
                    .arg("nodes.conf")
                    .arg("--cluster-port")
                    .arg(&free_port().to_string())
                    .arg("--cluster-node-timeout")
                    .arg("5000")
                    .start()
            })
            .collect();
        let addresses: Vec<String> = nodes
            .iter()
            .map(|n| format!("127.0.0.1:{}", n.port()))
            .collect();
        let created = Command::new("redis-cli")
            .arg("--cluster")
            .arg("create")
            .args(&addresses)
            .args(["--cluster-replicas", "0", "--cluster-yes"])
            .stdin(Stdio::null())
            .output()
            .expect("redis-cli not found on PATH (it comes with redis-server)");
        assert!(
            created.status.success(),
            "redis-cli --cluster create failed: {}{}",
            String::from_utf8_lossy(&created.stdout),
            String::from_utf8_lossy(&created.stderr)
        );
        let cluster = PrivateRedisCluster { nodes };
        let deadline = Instant::now() + START_LIMIT;
        while !cluster.nodes.iter().all(|n| cluster_ok(n.port())) {
            assert!(
                Instant::now() < deadline,
                "the cluster did not reach cluster_state:ok within {START_LIMIT:?}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        cluster
    }

    /// `redis+cluster://127.0.0.1:P1,127.0.0.1:P2,127.0.0.1:P3`.
    pub fn url(&self) -> String {
        let hosts: Vec<String> = self
            .nodes
            .iter()
            .map(|n| format!("127.0.0.1:{}", n.port()))
            .collect();
        format!("redis+cluster://{}", hosts.join(","))
    }

    /// The plain `redis://` URL of each node.
    pub fn node_urls(&self) -> Vec<String> {
        self.nodes.iter().map(PrivateRedis::url).collect()
    }
}

/// Does the cluster node on 127.0.0.1:`port` report `cluster_state:ok`?
fn cluster_ok(port: u16) -> bool {
    Command::new("redis-cli")
        .args(["-p", &port.to_string(), "cluster", "info"])
        .stdin(Stdio::null())
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("cluster_state:ok"))
}

// ------------------------------------------------------------------------------------------------
// RabbitMQ

/// How to build a [`PrivateRabbit`].
#[derive(Clone, Debug, Default)]
pub struct RabbitOptions {
    config: Vec<String>,
    files: Vec<(String, Vec<u8>)>,
}

impl RabbitOptions {
    /// A `rabbitmq.conf` line (`listeners.ssl.default = 5671`), after the defaults.
    pub fn config_line(mut self, line: &str) -> Self {
        self.config.push(line.to_owned());
        self
    }

    /// A file written into the node's folder before the start (see [`PrivateRabbit::dir`]),
    /// readable by the node's user.
    pub fn file(mut self, name: &str, contents: impl Into<Vec<u8>>) -> Self {
        self.files.push((name.to_owned(), contents.into()));
        self
    }

    /// Starts the node and waits until it accepts AMQP connections.
    pub fn start(self) -> PrivateRabbit {
        PrivateRabbit::create(self)
    }
}

/// A RabbitMQ node of the test's own (`oprec_<tag>@localhost`), beside the shared one: its own
/// AMQP and distribution ports, database, logs, config (no plugins) in a temporary folder, and
/// `guest`/`guest` from 127.0.0.1. Its queues survive [`restart`](Self::restart) only when durable.
#[derive(Debug)]
pub struct PrivateRabbit {
    dir: PathBuf,
    node: String,
    port: u16,
    dist_port: u16,
    user: Option<&'static str>,
    child: Option<Child>,
    starts: u32,
}

/// Debian's layout: the real scripts (the ones on PATH re-run themselves through `su`).
const RABBIT_BIN: &str = "/usr/lib/rabbitmq/bin";

impl PrivateRabbit {
    /// The options, to add config lines or files before the start.
    pub fn builder() -> RabbitOptions {
        RabbitOptions::default()
    }

    /// A node with the default options, started.
    pub fn start() -> PrivateRabbit {
        RabbitOptions::default().start()
    }

    fn create(options: RabbitOptions) -> PrivateRabbit {
        assert!(
            Path::new(RABBIT_BIN).join("rabbitmq-server").exists(),
            "{RABBIT_BIN}/rabbitmq-server not found: install the `rabbitmq-server` package \
             (apt-get install -y rabbitmq-server)"
        );
        let user = running_as_root().then_some("rabbitmq");
        let tag = unique_tag("oprec_rmq");
        let dir = service_dir(&tag, user);
        let port = free_port();
        let mut dist_port = free_port();
        while dist_port == port {
            dist_port = free_port();
        }
        let mut conf = format!(
            "listeners.tcp.default = 127.0.0.1:{port}\n\
             log.file.level = warning\n\
             log.console = false\n"
        );
        for line in &options.config {
            conf.push_str(line);
            conf.push('\n');
        }
        write_file(&dir.join("rabbitmq.conf"), conf.as_bytes(), user);
        write_file(&dir.join("enabled_plugins"), b"[].\n", user);
        // Read instead of /etc/rabbitmq/rabbitmq-env.conf, which names the shared node.
        write_file(
            &dir.join("rabbitmq-env.conf"),
            b"ERL_EPMD_ADDRESS=127.0.0.1\n",
            user,
        );
        for (name, contents) in &options.files {
            write_file(&dir.join(name), contents, user);
        }
        let mut rabbit = PrivateRabbit {
            dir,
            node: format!("{tag}@localhost"),
            port,
            dist_port,
            user,
            child: None,
            starts: 0,
        };
        rabbit.start_node();
        rabbit
    }

    /// The node's folder (where [`RabbitOptions::file`] puts files).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The node's name, for `rabbitmqctl -n`.
    pub fn node(&self) -> &str {
        &self.node
    }

    /// The AMQP port (127.0.0.1).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `amqp://guest:guest@127.0.0.1:PORT/%2f`.
    pub fn url(&self) -> String {
        format!("amqp://guest:guest@127.0.0.1:{}/%2f", self.port)
    }

    fn log_path(&self) -> PathBuf {
        self.dir.join(format!("node-{}.out", self.starts))
    }

    /// The node's environment: everything in its own folder.
    fn env(&self) -> Vec<(&'static str, String)> {
        let d = |name: &str| self.dir.join(name).to_string_lossy().into_owned();
        vec![
            ("RABBITMQ_NODENAME", self.node.clone()),
            ("RABBITMQ_NODE_IP_ADDRESS", "127.0.0.1".to_owned()),
            ("RABBITMQ_NODE_PORT", self.port.to_string()),
            ("RABBITMQ_DIST_PORT", self.dist_port.to_string()),
            ("RABBITMQ_CONFIG_FILE", d("rabbitmq.conf")),
            ("RABBITMQ_CONF_ENV_FILE", d("rabbitmq-env.conf")),
            ("RABBITMQ_ENABLED_PLUGINS_FILE", d("enabled_plugins")),
            ("RABBITMQ_MNESIA_BASE", d("mnesia")),
            ("RABBITMQ_LOG_BASE", d("log")),
            ("RABBITMQ_PID_FILE", d("node.pid")),
        ]
    }

    /// `rabbitmqctl -n NODE args`, as the node's user.
    fn ctl(&self, args: &[&str]) -> Command {
        let mut all = vec!["-n", self.node.as_str()];
        all.extend_from_slice(args);
        let mut c = command_as(self.user, &Path::new(RABBIT_BIN).join("rabbitmqctl"), &all);
        c.envs(self.env());
        c
    }

    fn start_node(&mut self) {
        assert!(self.child.is_none(), "the RabbitMQ node is already running");
        self.starts += 1;
        let log = self.log_path();
        write_file(&log, b"", self.user);
        let mut c = command_as(
            self.user,
            &Path::new(RABBIT_BIN).join("rabbitmq-server"),
            &[],
        );
        let child = c
            .envs(self.env())
            .current_dir(&self.dir)
            .stdin(Stdio::null())
            .stdout(fs::File::create(&log).expect("rabbit log"))
            .stderr(Stdio::from(
                fs::File::options().append(true).open(&log).expect("log"),
            ))
            .spawn()
            .expect("spawn rabbitmq-server");
        self.child = Some(child);
        // `await_startup` fails at once while the node is not yet registered: ask again until
        // it answers, then wait for the AMQP listener.
        let deadline = Instant::now() + START_LIMIT;
        loop {
            let out = self
                .ctl(&["await_startup", "--timeout", "60"])
                .stdin(Stdio::null())
                .output()
                .expect("run rabbitmqctl");
            if out.status.success() {
                break;
            }
            let exited = self
                .child
                .as_mut()
                .and_then(|c| c.try_wait().ok().flatten());
            if exited.is_some() || Instant::now() >= deadline {
                panic!(
                    "the RabbitMQ node {} did not start (exited: {exited:?}); rabbitmqctl said: {}\n\
                     the end of {}:\n{}",
                    self.node,
                    String::from_utf8_lossy(&out.stderr),
                    log.display(),
                    tail(&log, 30)
                );
            }
            std::thread::sleep(Duration::from_millis(500));
        }
        let port = self.port;
        wait_until("RabbitMQ AMQP listener", START_LIMIT, &log, || {
            port_open(port)
        });
    }

    /// Stops the node (`rabbitmqctl stop`, a clean shutdown) and waits for its process to end.
    pub fn stop(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        let stopped = self
            .ctl(&["stop"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        let deadline = Instant::now() + Duration::from_secs(60);
        while stopped && Instant::now() < deadline {
            if let Ok(Some(_)) = child.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        self.kill_beam();
        let _ = child.kill();
        let _ = child.wait();
        let deadline = Instant::now() + Duration::from_secs(10);
        while port_open(self.port) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// SIGKILLs the node's Erlang VM if it is still there (by its pid file).
    fn kill_beam(&self) {
        let Ok(pid) = fs::read_to_string(self.dir.join("node.pid")) else {
            return;
        };
        let pid = pid.trim();
        if pid.parse::<u32>().is_ok() && Path::new("/proc").join(pid).exists() {
            let _ = Command::new("kill")
                .args(["-KILL", pid])
                .stderr(Stdio::null())
                .status();
        }
    }

    /// Starts the node again after [`stop`](Self::stop).
    pub fn start_again(&mut self) {
        self.start_node();
    }

    /// Stops and starts the node: every connection is cut.
    pub fn restart(&mut self) {
        self.stop();
        self.start_node();
    }

    /// Is the node accepting AMQP connections?
    pub fn is_up(&self) -> bool {
        port_open(self.port)
    }
}

impl Drop for PrivateRabbit {
    fn drop(&mut self) {
        self.stop();
        if std::thread::panicking() {
            eprintln!(
                "private RabbitMQ node kept for inspection: {}",
                self.dir.display()
            );
        } else {
            let _ = fs::remove_dir_all(&self.dir);
        }
    }
}
