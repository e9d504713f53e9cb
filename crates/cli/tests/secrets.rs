//! Secrets are never printed. A distinctive password is put in PostgreSQL,
//! Redis, AMQP and webhook URLs, and every place a URL can surface is formatted and searched for
//! it: the `Debug` of every struct holding a URL or config, the `Display`, alternate and `Debug`
//! forms (and source chains) of every connect error (unreachable host, refused credentials,
//! unsupported scheme, malformed URL, bad query parameters), tracing at trace level captured
//! in-process, the `oprec` binary's stdout and stderr (with `-vv`) for each command that takes a
//! URL, `--help` of every command with the URLs set in the environment, and `--json` outputs.
//! Where a URL is shown, it must be shown with `***` in place of the password.
//!
//! Needs the shared PostgreSQL (trust auth, so a password in the URL is accepted and ignored),
//! Redis (no password set, so AUTH with one fails) and RabbitMQ (guest/guest, so another
//! password is refused); a missing service fails the test.

mod background;
mod common;
mod pg;

use std::io::Write;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use common::{Oprec, Run, bin};
use pg::Pg;

/// The password every test hides.
const PW: &str = "s3cr3t-Pa55";

/// A port nothing listens on.
const DEAD_PORT: u16 = 1;

/// Fails when `text` holds the password anywhere (also percent-encoded).
fn assert_clean(what: &str, text: &str) {
    assert!(
        !text.contains(PW) && !text.contains("s3cr3t%2DPa55") && !text.contains("s3cr3t"),
        "{what} shows the password:\n{text}"
    );
}

/// The shared Redis's host and port, as the tests see them (the tests add a password and a
/// database of their own, so a database in OPREC_TEST_REDIS_URL is dropped).
fn redis_host() -> String {
    let url = std::env::var("OPREC_TEST_REDIS_URL")
        .unwrap_or_else(|_| "redis://127.0.0.1:6379".to_owned());
    let rest = url.trim_start_matches("redis://");
    rest.split(['/', '?']).next().unwrap_or(rest).to_owned()
}

/// `url` with `:PW` added to its user (the shared PostgreSQL trusts 127.0.0.1, so it still works).
fn with_password(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").expect("a URL");
    match rest.split_once('@') {
        Some((user, host)) => format!("{scheme}://{}:{PW}@{host}", user.split(':').next().unwrap()),
        None => format!("{scheme}://postgres:{PW}@{rest}"),
    }
}

/// Every URL a user could hand oprec, with the password, that cannot work.
fn failing_database_urls() -> Vec<String> {
    vec![
        // unreachable
        format!("postgres://oprec:{PW}@127.0.0.1:{DEAD_PORT}/oprec"),
        // refused: no such role on a real server
        format!("postgres://nosuch_oprec_role:{PW}@127.0.0.1:5432/test"),
        // password as a query parameter
        format!("postgres://127.0.0.1:{DEAD_PORT}/oprec?user=oprec&password={PW}"),
        // unsupported scheme
        format!("mysql://oprec:{PW}@127.0.0.1/oprec"),
        // malformed
        format!("postgres://oprec:{PW}@127.0.0.1:notaport/oprec"),
        format!("postgres://oprec:{PW}@[::1/oprec"),
        // bad query parameters
        format!("postgres://oprec:{PW}@127.0.0.1:{DEAD_PORT}/oprec?sslmode=bogus"),
        format!("postgres://oprec:{PW}@127.0.0.1:{DEAD_PORT}/oprec?port=x"),
        format!(
            "postgres://oprec:{PW}@127.0.0.1/oprec?sslmode=verify-full&sslrootcert=/nonexistent/ca.pem"
        ),
    ]
}

/// Transport URLs with the password that cannot work.
fn failing_transport_urls() -> Vec<String> {
    let redis = redis_host();
    vec![
        format!("redis://:{PW}@127.0.0.1:{DEAD_PORT}/0"),
        format!("redis://user:{PW}@{redis}/0"),
        format!("redis://:{PW}@{redis}/0"),
        format!("rediss://:{PW}@127.0.0.1:{DEAD_PORT}/0"),
        format!("redis://:{PW}@127.0.0.1:99999/0"),
        format!("redis://:{PW}@{redis}/0?stream="),
        format!("redis://:{PW}@{redis}/0?queue=q"),
        format!("amqp://guest:{PW}@127.0.0.1:{DEAD_PORT}/%2f"),
        format!("amqp://guest:{PW}@127.0.0.1:5672/%2f"),
        format!("amqps://guest:{PW}@127.0.0.1:{DEAD_PORT}/%2f"),
        format!("amqp://guest:{PW}@127.0.0.1:port/%2f"),
        format!("amqp://guest:{PW}@127.0.0.1:5672/%2f?prefetch=0"),
        format!("amqp://guest:{PW}@127.0.0.1:5672/%2f?heartbeat=soon"),
        format!("amqp://guest:{PW}@127.0.0.1:5672/%2f?stream=s"),
        format!("kafka://user:{PW}@127.0.0.1:9092"),
    ]
}

/// Every form of an error: Display, alternate, Debug, and each source in its chain.
fn error_text(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = format!("{e}\n{e:#}\n{e:?}\n{e:#?}\n");
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(&format!("{s}\n{s:?}\n"));
        source = s.source();
    }
    text
}

/// Everything traced (at trace level, `log` records included) by this test process.
fn captured_logs() -> Arc<Mutex<Vec<u8>>> {
    static LOGS: OnceLock<Arc<Mutex<Vec<u8>>>> = OnceLock::new();
    LOGS.get_or_init(|| {
        let logs = Arc::new(Mutex::new(Vec::new()));
        let sink = logs.clone();
        tracing_subscriber::fmt()
            .with_max_level(tracing::Level::TRACE)
            .with_ansi(false)
            .with_writer(move || Capture(sink.clone()))
            .try_init()
            .expect("the only subscriber of this test binary");
        logs
    })
    .clone()
}

struct Capture(Arc<Mutex<Vec<u8>>>);

impl Write for Capture {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

#[test]
fn connect_errors_configs_and_logs_never_show_the_password() {
    let logs = captured_logs();
    let rt = runtime();
    let _in_runtime = rt.enter();
    let mut checked = 0;

    // Stores: every failing URL, through the facade's connect; transports: the URL is checked
    // at once and the connection made on first use. All at once: a refused connection is retried
    // until the pool's acquire timeout.
    let mut tasks = Vec::new();
    for url in failing_database_urls() {
        tasks.push(tokio::spawn(async move {
            let text =
                match tokio::time::timeout(Duration::from_secs(40), oprec::connect(&url)).await {
                    Ok(Err(e)) => error_text(&e),
                    Ok(Ok(_)) => panic!("{} connected", oprec::redact_url(&url)),
                    Err(_) => panic!("{} hung", oprec::redact_url(&url)),
                };
            (url, text)
        }));
    }
    for url in failing_transport_urls() {
        tasks.push(tokio::spawn(async move {
            let text = match oprec::connect_transport(&url) {
                Err(e) => error_text(&e),
                Ok(None) => panic!("{} is no transport", oprec::redact_url(&url)),
                Ok(Some(t)) => {
                    match tokio::time::timeout(Duration::from_secs(20), t.depth(None)).await {
                        Ok(Err(e)) => error_text(&e),
                        Ok(Ok(n)) => panic!("{} answered depth {n}", oprec::redact_url(&url)),
                        Err(_) => panic!("{} hung", oprec::redact_url(&url)),
                    }
                }
            };
            (url, text)
        }));
    }
    for task in tasks {
        let (url, text) = rt.block_on(task).expect("a task");
        assert_clean(&format!("the error for {}", oprec::redact_url(&url)), &text);
        checked += 1;
    }

    // The Debug of everything that holds a URL or a config with one.
    let redis = oprec::redis::RedisTransport::connect_lazy(
        &format!("redis://user:{PW}@{}/0", redis_host()),
        oprec::redis::RedisTransportConfig::default(),
    )
    .expect("a valid URL");
    let rediss = oprec::redis::RedisTransport::connect_lazy(
        &format!("rediss://:{PW}@cache.example:6380/0"),
        oprec::redis::RedisTransportConfig::default(),
    )
    .expect("a valid URL");
    let amqp = oprec::amqp::AmqpTransport::connect_lazy(
        &format!("amqps://app:{PW}@rabbit.example:5671/%2f?heartbeat=10"),
        oprec::amqp::AmqpTransportConfig::default(),
    )
    .expect("a valid URL");
    let webhook = oprec::runtime::WebhookSink::new(&format!("https://hook:{PW}@hooks.example/x"))
        .expect("a valid URL");
    let bench = oprec_bench::BenchConfig::new(
        format!("postgres://bench:{PW}@127.0.0.1/bench"),
        oprec_bench::WorkerCommand {
            program: "oprec".into(),
            args: vec![],
        },
    );
    let pg = rt
        .block_on(oprec::postgres::PgStore::connect(&with_password(
            &pg::database_url(),
        )))
        .expect("the shared PostgreSQL trusts 127.0.0.1 whatever the password");
    let mut worker_config = oprec::WorkerConfig::default();
    worker_config
        .alerter
        .default_sinks
        .push(std::sync::Arc::new(webhook.clone()));
    let debug = [
        ("RedisTransport", format!("{redis:?} {redis:#?}")),
        ("RedisTransport (rediss)", format!("{rediss:?}")),
        ("AmqpTransport", format!("{amqp:?} {amqp:#?}")),
        ("WebhookSink", format!("{webhook:?} {webhook:#?}")),
        ("BenchConfig", format!("{bench:?} {bench:#?}")),
        ("PgStore", format!("{pg:?} {pg:#?}")),
        ("WorkerConfig", format!("{worker_config:?}")),
    ];
    for (what, text) in &debug {
        assert_clean(what, text);
    }
    for (what, text) in debug.iter().filter(|(w, _)| *w != "PgStore") {
        assert!(
            text.contains("***"),
            "{what} should show the URL redacted: {text}"
        );
    }

    // The webhook's failure (a refused connection) as the alerter would log it.
    let dead = oprec::runtime::DeadLetter {
        id: oprec::OperationId::new(),
        kind: "demo.noop".into(),
        dependency: None,
        reason: None,
        class: None,
        error: None,
        next_action: None,
        attempts: 1,
        code_version: None,
        terminal_at: None,
    };
    let e = rt
        .block_on(oprec::runtime::DeadLetterSink::announce(
            &oprec::runtime::WebhookSink::new(&format!("http://hook:{PW}@127.0.0.1:{DEAD_PORT}/x"))
                .unwrap(),
            &oprec::runtime::Alert::Dead(dead),
        ))
        .expect_err("nothing listens there");
    assert_clean("a failed webhook post", &format!("{e} {e:#} {e:?}"));
    rt.block_on(pg.pool().close());

    let logs = String::from_utf8_lossy(&logs.lock().unwrap()).into_owned();
    assert!(!logs.is_empty(), "trace logging captured nothing");
    assert_clean("the trace logs", &logs);
    assert!(checked >= 20, "only {checked} URLs checked");
}

/// Runs `oprec -vv ARGS` with the database and transport URLs in the environment, in a fresh
/// folder; kills it after a minute (and says so in stderr).
fn run_with(db: &str, transport: &str, args: &[&str]) -> Run {
    let o = Oprec::with_url(db);
    let mut c = o.command(&[&["-vv"][..], args].concat());
    let out_path = o.path("stdout");
    let err_path = o.path("stderr");
    let mut child = c
        .env("OPREC_TRANSPORT_URL", transport)
        .stdin(std::process::Stdio::null())
        .stdout(std::fs::File::create(&out_path).expect("stdout file"))
        .stderr(std::fs::File::create(&err_path).expect("stderr file"))
        .spawn()
        .expect("run oprec");
    let began = std::time::Instant::now();
    let code = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status.code();
        }
        if began.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut stderr = std::fs::read_to_string(&err_path).unwrap_or_default();
    if code.is_none() {
        stderr.push_str("\n(killed after 60 s)");
    }
    Run {
        code,
        stdout: std::fs::read_to_string(&out_path).unwrap_or_default(),
        stderr,
    }
}

/// Every command that opens the database (or a broker) named by a URL, with the arguments it
/// needs to get that far.
fn commands() -> Vec<Vec<String>> {
    let id = "01890a5d-ac96-774b-bcce-b302099a8057";
    let redis = redis_host();
    [
        vec!["migrate", "--json"],
        vec!["enqueue", "--kind", "demo.noop", "--payload", "{}"],
        vec!["ops", "list", "--json"],
        vec!["ops", "show", id],
        vec!["transport", "depth", "--json"],
        vec!["transport", "purge", "--yes"],
        vec!["worker", "--demo", "--exit-when-idle"],
        vec!["redrive", "--kind", "demo.noop", "--json"],
        vec!["pause", "--kind", "demo.noop"],
        vec!["resume", "--kind", "demo.noop"],
        vec!["postpone", "--dependency", "x", "--until", "1h"],
        vec!["controls", "--json"],
        vec!["quarantine", "--kind", "demo.noop", "--reason", "x"],
        vec!["release", "--kind", "demo.noop"],
        vec!["cancel", id],
        vec!["reconcile", "list"],
        vec!["stats", "--json"],
        vec!["workers", "--json"],
        vec!["audit"],
        vec!["bench", "--ops", "1", "--finished-rows", "0"],
    ]
    .into_iter()
    .map(|v| v.into_iter().map(String::from).collect())
    .chain([
        vec![
            "import".into(),
            "--from".into(),
            format!("redis://:{PW}@{redis}/0"),
            "--list".into(),
            "oprec:secrets:none".into(),
            "--kind".into(),
            "demo.noop".into(),
        ],
        vec![
            "import".into(),
            "--from".into(),
            format!("amqp://guest:{PW}@127.0.0.1:5672/%2f"),
            "--queue".into(),
            "oprec.secrets.none".into(),
            "--kind".into(),
            "demo.noop".into(),
        ],
    ])
    .collect()
}

#[test]
fn the_binary_never_prints_the_password_when_a_connection_fails() {
    // Each command on an unreachable PostgreSQL, on a role the server refuses, and (on a
    // working SQLite store) on Redis and AMQP that refuse the password. In parallel: a refused
    // connection makes a command wait for its connect timeout.
    let combos: Vec<(Option<String>, String)> = vec![
        (Some(failing_database_urls()[0].clone()), "poll".into()),
        (Some(failing_database_urls()[1].clone()), "poll".into()),
        (Some(failing_database_urls()[2].clone()), "poll".into()),
        // A fresh, migrated SQLite store each, so a worker that cannot take wake-ups is idle.
        (None, format!("redis://:{PW}@{}/0", redis_host())),
        (None, format!("amqp://guest:{PW}@127.0.0.1:5672/%2f")),
    ];
    let mut jobs = Vec::new();
    for (db, transport) in &combos {
        // The dashboard only where its store fails (on a working one it serves until stopped).
        let dashboard = ["dashboard", "--listen", "127.0.0.1:0"]
            .map(String::from)
            .to_vec();
        let extra = db.as_ref().map(|_| dashboard);
        for args in commands().into_iter().chain(extra) {
            let (db, transport) = (db.clone(), transport.clone());
            jobs.push(std::thread::spawn(move || {
                let sqlite = db.is_none().then(Oprec::migrated);
                let db = db.unwrap_or_else(|| sqlite.as_ref().unwrap().url.clone());
                let args: Vec<&str> = args.iter().map(String::as_str).collect();
                let run = run_with(&db, &transport, &args);
                (
                    format!(
                        "oprec {} (database {}, transport {})",
                        args.join(" ").replace(PW, "***"),
                        oprec::redact_url(&db),
                        oprec::redact_url(&transport)
                    ),
                    run,
                )
            }));
        }
    }
    let mut failures = 0;
    for job in jobs {
        let (what, run) = job.join().expect("a run");
        assert_clean(&what, &format!("{}\n{}", run.stdout, run.stderr));
        failures += usize::from(run.code != Some(0));
        let tail = &run.stderr[run
            .stderr
            .floor_char_boundary(run.stderr.len().saturating_sub(3000))..];
        assert!(
            !run.stderr.contains("panicked") && run.code.is_some(),
            "{what}: exit {:?}, stdout {}, stderr ...{tail}",
            run.code,
            run.stdout
        );
    }
    // Every command on a failing store fails; on SQLite with a refusing broker, those that
    // need the broker fail.
    assert!(
        failures >= 3 * commands().len(),
        "only {failures} runs failed"
    );
}

#[test]
fn help_and_json_outputs_never_show_the_password() {
    let transport = format!("amqp://guest:{PW}@127.0.0.1:5672/%2f");
    let database = format!("postgres://oprec:{PW}@127.0.0.1:{DEAD_PORT}/oprec");
    let help = |args: &[&str]| {
        let out = bin()
            .env("OPREC_DATABASE_URL", &database)
            .env("OPREC_TRANSPORT_URL", &transport)
            .args(args)
            .output()
            .expect("run oprec");
        assert_eq!(out.status.code(), Some(0), "oprec {args:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let top = help(&["--help"]);
    assert_clean("oprec --help", &top);
    // Every subcommand listed, and its subcommands.
    let names: Vec<String> = top
        .split("Commands:")
        .nth(1)
        .expect("a command list")
        .lines()
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| l.split_whitespace().next().map(String::from))
        .filter(|n| n != "help")
        .collect();
    assert!(names.len() >= 15, "{names:?}");
    for name in &names {
        let text = help(&[name, "--help"]);
        assert_clean(&format!("oprec {name} --help"), &text);
        if let Some(list) = text.split("Commands:").nth(1) {
            for sub in list
                .lines()
                .skip(1)
                .take_while(|l| !l.trim().is_empty())
                .filter_map(|l| l.split_whitespace().next())
                .filter(|n| *n != "help")
            {
                assert_clean(
                    &format!("oprec {name} {sub} --help"),
                    &help(&[name, sub, "--help"]),
                );
            }
        }
    }

    // The JSON a working store prints, with the password in its URL (trusted, so it works), and
    // a worker's debug logs.
    let (pg, _) = Pg::fresh();
    let o = Oprec::with_url(with_password(&pg.url));
    let migrated = o.run(&["migrate", "--json"]);
    assert_clean("migrate --json", &format!("{migrated:?}"));
    assert!(
        migrated.json()["database"]
            .as_str()
            .is_some_and(|d| d.contains(":***@")),
        "{migrated:?}"
    );
    let id = o.enqueue("demo.noop", "{}");
    // One that dies at once, for the dead-letter webhook (whose URL has the password too).
    o.enqueue("demo.flaky", r#"{"fail_times": 9, "class": "permanent"}"#);
    let webhook = format!("http://hook:{PW}@127.0.0.1:{DEAD_PORT}/dead");
    let worker = o.run(&[
        "-vv",
        "worker",
        "--demo",
        "--exit-when-idle",
        "--dead-letter-webhook",
        &webhook,
    ]);
    assert_clean("the worker with a webhook", &format!("{worker:?}"));
    // Only where the webhook points: no user info, no path (a Slack-style URL's secret is its path).
    assert!(
        worker.stderr.contains(&format!(
            "announcing dead operations to http://127.0.0.1:{DEAD_PORT}/…"
        )),
        "{worker:?}"
    );
    assert!(!worker.stderr.contains("/dead"), "{worker:?}");
    for args in [
        &["stats", "--json"][..],
        &["stats"],
        &["workers", "--json"],
        &["ops", "list", "--json"],
        &["ops", "show", &id, "--json"],
        &["redrive", "--kind", "demo.noop", "--json"],
        &["audit", "--json"],
    ] {
        let run = o.run(args);
        assert_clean(&format!("oprec {args:?}"), &format!("{run:?}"));
        assert_eq!(run.code, Some(0), "{run:#?}");
    }
}
