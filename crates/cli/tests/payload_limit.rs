//! The payload size limit at enqueue (`--max-payload-bytes`, `OPREC_MAX_PAYLOAD_BYTES`, default
//! 256 KiB): a payload over it is refused with a clear error and nothing is stored — counted with
//! SQL of our own, on SQLite and on a fresh PostgreSQL schema; a payload at the limit, or under a
//! raised one (from a file or standard input), is stored whole; an endless `--payload-file` is
//! refused after a bounded read.

mod common;
mod pg;

use common::Oprec;

/// A JSON payload of exactly `bytes` bytes.
fn payload(bytes: usize) -> String {
    let p = format!("{{\"blob\":\"{}\"}}", "x".repeat(bytes - 11));
    assert_eq!(p.len(), bytes);
    p
}

/// Runs the limits against `o`, with `count` reading the number of stored operations.
fn limits(o: &Oprec, count: &dyn Fn() -> i64) {
    let big = o.path("big.json");
    std::fs::write(&big, payload(256 * 1024 + 1)).unwrap();
    let big = big.to_str().unwrap();
    let enqueue = |extra: &[&str]| {
        let mut args = vec!["--transport", "poll", "enqueue", "--kind", "demo.noop"];
        args.extend_from_slice(extra);
        o.run(&args)
    };

    // The default: one byte over 256 KiB is refused, alone or with --count; nothing stored.
    enqueue(&["--payload-file", big])
        .bad_input("payload is 262145 bytes, over the limit of 262144 bytes");
    enqueue(&["--payload-file", big, "--count", "3"]).bad_input("over the limit of 262144");
    assert_eq!(count(), 0, "nothing is stored");
    // At the limit exactly: stored.
    let at = o.path("at.json");
    std::fs::write(&at, payload(256 * 1024)).unwrap();
    enqueue(&["--payload-file", at.to_str().unwrap()]).ok();
    assert_eq!(count(), 1);

    // A lower limit by flag, a higher one by the environment (from standard input).
    enqueue(&["--payload", &payload(2048), "--max-payload-bytes", "1024"])
        .bad_input("payload is 2048 bytes, over the limit of 1024 bytes");
    assert_eq!(count(), 1);
    let raised = o
        .command(&[
            "--transport",
            "poll",
            "enqueue",
            "--kind",
            "demo.noop",
            "--payload-file",
            "-",
            "--json",
        ])
        .env("OPREC_MAX_PAYLOAD_BYTES", "1048576")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut raised = raised;
    std::io::Write::write_all(
        &mut raised.stdin.take().unwrap(),
        payload(300 * 1024).as_bytes(),
    )
    .unwrap();
    let out = raised.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let id: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let shown = o.show(id["id"].as_str().unwrap());
    assert_eq!(
        shown["operation"]["payload"]["blob"].as_str().map(str::len),
        Some(300 * 1024 - 11),
        "stored whole"
    );
    assert_eq!(count(), 2);
    let lots = enqueue(&["--payload", "{}", "--max-payload-bytes", "lots"]);
    assert_eq!(lots.code, Some(2), "{lots:?}");
    assert!(lots.stderr.contains("--max-payload-bytes"), "{lots:?}");

    // An endless file is read only up to four times the limit (1 MiB at least), then refused.
    enqueue(&["--payload-file", "/dev/zero", "--max-payload-bytes", "1024"]).bad_input(
        "--payload-file /dev/zero goes on past 1048576 bytes (the payload limit is 1024 bytes",
    );
    assert_eq!(count(), 2, "nothing stored");
    // So is endless standard input.
    let endless = o
        .command(&[
            "--transport",
            "poll",
            "enqueue",
            "--kind",
            "demo.noop",
            "--payload-file",
            "-",
            "--max-payload-bytes",
            "1024",
        ])
        .stdin(std::fs::File::open("/dev/zero").unwrap())
        .output()
        .unwrap();
    assert_eq!(endless.status.code(), Some(2), "{endless:?}");
    assert!(
        String::from_utf8_lossy(&endless.stderr)
            .contains("the payload on standard input goes on past 1048576 bytes"),
        "{endless:?}"
    );
    assert_eq!(count(), 2, "nothing stored");
}

#[test]
fn payload_limit_on_sqlite() {
    let o = Oprec::migrated();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let pool = rt.block_on(sqlx::SqlitePool::connect(&o.url)).unwrap();
    let count = || {
        rt.block_on(
            sqlx::query_scalar::<_, i64>("SELECT count(*) FROM operations").fetch_one(&pool),
        )
        .unwrap()
    };
    limits(&o, &count);
}

#[test]
fn payload_limit_on_postgres() {
    let (db, o) = pg::Pg::fresh();
    limits(&o, &|| db.int("SELECT count(*) FROM operations"));
}
