//! Hostile strings in every filter flag of every command that filters, run through the real
//! `oprec` binary on SQLite (the default) and on a fresh PostgreSQL schema: SQL fragments, LIKE
//! metacharacters, a 100 KB string, unicode, control characters, invalid UTF-8 as an argument and
//! from a file. Each run must exit 2 with one clear line, or exit 0 with a correct empty result;
//! nothing panics; and afterwards the schema, the operations and their history are exactly as they
//! were (a snapshot of the catalog and a digest of the rows, taken with SQL of our own).

mod common;
mod pg;

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::process::Stdio;

use common::Oprec;
use serde_json::Value;

/// The values every filter flag is fed.
fn hostile() -> Vec<String> {
    vec![
        "'; DROP TABLE operations; --".into(),
        "' OR 1=1 --".into(),
        "\") UNION SELECT id FROM operations --".into(),
        "%".into(),
        "_".into(),
        "\\".into(),
        "%%".into(),
        "\\%".into(),
        "*".into(),
        "ünïcødé ☃ 𝕏 \u{202E}evil".into(),
        "\u{1b}[31mred".into(),
        "tab\there".into(),
        "x".repeat(100_000),
        "%".repeat(100_000),
    ]
}

/// One way a rig's database is looked at: the catalog and a digest of the rows.
trait Snapshot {
    fn snapshot(&self) -> String;
}

struct Sqlite {
    rt: tokio::runtime::Runtime,
    pool: sqlx::SqlitePool,
}

impl Sqlite {
    fn open(o: &Oprec) -> Self {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let pool = rt
            .block_on(sqlx::SqlitePool::connect(&o.url))
            .expect("open the SQLite file");
        Sqlite { rt, pool }
    }

    fn text(&self, sql: &str) -> String {
        self.rt
            .block_on(
                sqlx::query_scalar::<_, Option<String>>(sqlx::AssertSqlSafe(sql.to_owned()))
                    .fetch_one(&self.pool),
            )
            .unwrap_or_else(|e| panic!("{sql}: {e}"))
            .unwrap_or_default()
    }
}

impl Snapshot for Sqlite {
    fn snapshot(&self) -> String {
        [
            "SELECT group_concat(type || ':' || name || ':' || coalesce(sql, ''), '|') \
             FROM (SELECT * FROM sqlite_master ORDER BY type, name)",
            "SELECT count(*) || ';' || coalesce(group_concat(id || status || attempt || \
             coalesce(last_error, '') || coalesce(terminal_reason, '') || updated_at, '|'), '') \
             FROM (SELECT * FROM operations ORDER BY id)",
            "SELECT count(*) || ';' || coalesce(group_concat(operation_id || attempt || outcome, \
             '|'), '') FROM (SELECT * FROM operation_attempts ORDER BY operation_id, attempt)",
        ]
        .map(|q| self.text(q))
        .join("\n")
    }
}

impl Snapshot for pg::Pg {
    fn snapshot(&self) -> String {
        [
            "SELECT string_agg(c.relname || ':' || c.relkind::text, ',' ORDER BY c.relname) \
             FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
             WHERE n.nspname = current_schema()",
            "SELECT string_agg(table_name || '.' || column_name || ':' || data_type || ':' || \
             is_nullable, ',' ORDER BY table_name, ordinal_position) \
             FROM information_schema.columns WHERE table_schema = current_schema()",
            "SELECT count(*)::text || ';' || coalesce(md5(string_agg(o::text, '|' ORDER BY o.id)), '') \
             FROM operations o",
            "SELECT count(*)::text || ';' || coalesce(md5(string_agg(a::text, '|' \
             ORDER BY a.operation_id, a.attempt)), '') FROM operation_attempts a",
            "SELECT count(*)::text FROM pg_namespace WHERE nspname = current_schema()",
        ]
        .map(|q| self.text(q).unwrap_or_default())
        .join("\n")
    }
}

/// What a hostile run may do: exit 2 with one clear line, or exit 0 with an empty result.
/// Returns whether it was refused, or what was wrong.
fn refused_or_empty(
    o: &Oprec,
    args: &[&str],
    value: &OsStr,
    empty: impl Fn(&Value) -> bool,
) -> Result<bool, String> {
    let out = o
        .command(args)
        .arg(value)
        .stdin(Stdio::null())
        .output()
        .expect("run oprec");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let shown = |s: &str| s.chars().take(200).collect::<String>();
    let what = |why: &str| {
        format!(
            "{why}: oprec {} {:?}: exit {:?}\nstdout: {}\nstderr: {}",
            args.join(" "),
            shown(&value.to_string_lossy()),
            out.status.code(),
            shown(&stdout),
            shown(&stderr)
        )
    };
    if stderr.contains("panicked") || stderr.contains("backtrace") {
        return Err(what("a panic"));
    }
    match out.status.code() {
        Some(2) => {
            let err = stderr.trim_end();
            // Ours are one line, `oprec: ...`; clap's own (invalid UTF-8, a bad number) start
            // `error: ...` and add a usage block.
            let first = err.lines().next().unwrap_or_default();
            if first.starts_with("oprec: ") {
                if err.lines().count() != 1 {
                    return Err(what("not one line"));
                }
            } else if !first.starts_with("error: ") {
                return Err(what("not a clear error"));
            }
            // Ours quote a value cut short; clap's usage errors quote it whole, as clap does.
            if first.starts_with("oprec: ") && err.len() > 1_000 {
                return Err(what("the error echoes the whole value"));
            }
            Ok(true)
        }
        Some(0) => match serde_json::from_str::<Value>(&stdout) {
            Ok(v) if empty(&v) => Ok(false),
            Ok(_) => Err(what("not an empty result")),
            Err(_) => Err(what("not JSON")),
        },
        _ => Err(what("neither refused nor answered")),
    }
}

fn empty_list(v: &Value) -> bool {
    v.as_array().is_some_and(Vec::is_empty)
}

fn matched_none(v: &Value) -> bool {
    v["matched"] == 0
}

fn moved_none(v: &Value) -> bool {
    v["moved"] == 0 && v["changed"] == false
}

/// One dead operation with an error summary (for LIKE to match too much against) and one
/// pending, delayed one (for a too-broad quarantine to move).
fn seed(o: &Oprec) -> String {
    let dead = o.enqueue("demo.flaky", r#"{"fail_times": 9, "class": "permanent"}"#);
    o.work_until_idle();
    assert_eq!(o.show(&dead)["operation"]["status"], "dead");
    o.run(&[
        "enqueue",
        "--kind",
        "demo.noop",
        "--payload",
        "{}",
        "--delay",
        "1h",
    ])
    .ok();
    dead
}

/// Every filter flag of every command, with every hostile value and invalid UTF-8.
fn every_filter_is_safe(o: &Oprec, db: &dyn Snapshot) {
    let dead = seed(o);
    let before = db.snapshot();
    // The filter works at all, and LIKE metacharacters are literal: a bare `%` or `_` would
    // match the dead operation's error summary if they were wildcards.
    let found = o
        .run(&[
            "redrive",
            "--error-contains",
            "PERMANENT",
            "--dry-run",
            "--json",
        ])
        .json();
    assert_eq!(found["matched"], 1, "{found}");

    type Case<'a> = (&'a [&'a str], fn(&Value) -> bool);
    let cases: &[Case] = &[
        (&["ops", "list", "--json", "--kind"], empty_list),
        (&["ops", "list", "--json", "--status"], empty_list),
        (&["ops", "list", "--json", "--class"], empty_list),
        (&["ops", "list", "--json", "--after"], empty_list),
        (&["ops", "show", "--json"], |_| false),
        (&["redrive", "--dry-run", "--json", "--kind"], matched_none),
        (&["redrive", "--dry-run", "--json", "--class"], matched_none),
        (
            &["redrive", "--dry-run", "--json", "--error-contains"],
            matched_none,
        ),
        (
            &["redrive", "--dry-run", "--json", "--dependency"],
            matched_none,
        ),
        (&["redrive", "--dry-run", "--json", "--id"], matched_none),
        (
            &["redrive", "--dry-run", "--json", "--reason"],
            matched_none,
        ),
        (&["redrive", "--dry-run", "--json", "--since"], matched_none),
        (&["redrive", "--dry-run", "--json", "--until"], matched_none),
        (
            &["quarantine", "--reason", "r", "--yes", "--json", "--kind"],
            moved_none,
        ),
        (
            &["quarantine", "--reason", "r", "--yes", "--json", "--class"],
            moved_none,
        ),
        (
            &[
                "quarantine",
                "--reason",
                "r",
                "--yes",
                "--json",
                "--error-contains",
            ],
            moved_none,
        ),
        (
            &[
                "quarantine",
                "--reason",
                "r",
                "--yes",
                "--json",
                "--dependency",
            ],
            moved_none,
        ),
        (
            &["quarantine", "--reason", "r", "--yes", "--json", "--id"],
            moved_none,
        ),
        (&["release", "--yes", "--json", "--kind"], moved_none),
        (
            &["release", "--yes", "--json", "--error-contains"],
            moved_none,
        ),
        (&["release", "--yes", "--json", "--dependency"], moved_none),
        (&["release", "--yes", "--json", "--id"], moved_none),
        (&["cancel", "--json"], |_| false),
        (&["reconcile", "list", "--json", "--kind"], empty_list),
        (&["reconcile", "resolve", "--applied", "--json"], |_| false),
        (&["audit", "--json", "--limit"], |_| false),
        (&["pause", "--json", "--class"], |_| false),
        (&["pause", "--json", "--kind", "k", "--until"], |_| false),
        (&["enqueue", "--payload", "{}", "--json", "--kind"], |_| {
            false
        }),
    ];
    let mut values: Vec<Vec<u8>> = hostile().into_iter().map(String::into_bytes).collect();
    values.push(b"\xff\xfe'; DROP TABLE operations; --".to_vec());
    values.push(b"demo.\xc3".to_vec());
    let (mut refused, mut empty, mut wrong) = (0, 0, Vec::new());
    for (args, is_empty) in cases {
        for v in &values {
            match refused_or_empty(o, args, OsStr::from_bytes(v), is_empty) {
                Ok(true) => refused += 1,
                Ok(false) => empty += 1,
                Err(e) => wrong.push(e),
            }
        }
    }
    // Kinds and dependencies are open-ended names: a pause on a hostile one is stored as the
    // literal text (in scope of nothing) and resumed, or refused.
    let controls: [(&[&str], &str); 3] = [
        (&["pause", "--json", "--kind"], "--kind"),
        (&["pause", "--json", "--dependency"], "--dependency"),
        (
            &["postpone", "--until", "1h", "--json", "--dependency"],
            "--dependency",
        ),
    ];
    for (set, flag) in controls {
        for v in &values {
            let value = OsStr::from_bytes(v);
            let paused = refused_or_empty(o, set, value, |v| {
                v["in_scope"] == 0 && v["control"]["value"].is_string()
            });
            match paused {
                Ok(true) => refused += 1,
                Ok(false) => {
                    empty += 1;
                    if let Err(e) =
                        refused_or_empty(o, &["resume", "--json", flag], value, |_| true)
                    {
                        wrong.push(e);
                    }
                }
                Err(e) => wrong.push(e),
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "{} runs misbehaved:\n{}",
        wrong.len(),
        wrong.join("\n\n")
    );
    let controls = o.run(&["controls", "--json"]).json();
    assert_eq!(controls.as_array().map(Vec::len), Some(0), "{controls}");

    // Payload files: invalid UTF-8, invalid JSON, a raw NUL, nesting past the parser's limit,
    // a directory, and invalid UTF-8 on standard input.
    let files: &[(&str, &[u8])] = &[
        ("utf8.json", b"{\"a\": \"\xff\xfe\"}"),
        ("broken.json", b"{\"a\": "),
        ("nul.json", b"{\"a\": \"x\0y\"}"),
        ("empty.json", b""),
        ("sql.json", b"'; DROP TABLE operations; --"),
    ];
    for (name, bytes) in files {
        let path = o.path(name);
        std::fs::write(&path, bytes).unwrap();
        let run = o.run(&[
            "enqueue",
            "--kind",
            "demo.noop",
            "--json",
            "--payload-file",
            path.to_str().unwrap(),
        ]);
        run.bad_input("--payload-file");
    }
    // Valid JSON that PostgreSQL's jsonb cannot keep: refused alike on every store.
    let nul = o.path("nul-escape.json");
    std::fs::write(&nul, br#"{"a": "x\u0000y"}"#).unwrap();
    o.run(&[
        "enqueue",
        "--kind",
        "demo.noop",
        "--payload-file",
        nul.to_str().unwrap(),
    ])
    .bad_input("NUL character");
    let deep = o.path("deep.json");
    std::fs::write(&deep, "[".repeat(100_000)).unwrap();
    o.run(&[
        "enqueue",
        "--kind",
        "demo.noop",
        "--payload-file",
        deep.to_str().unwrap(),
    ])
    .bad_input("not valid JSON");
    o.run(&[
        "enqueue",
        "--kind",
        "demo.noop",
        "--payload-file",
        o.path("").to_str().unwrap(),
    ])
    .bad_input("cannot read --payload-file");
    let mut child = o
        .command(&["enqueue", "--kind", "demo.noop", "--payload-file", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), b"{\"a\": \"\xff\"}").unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("standard input"),
        "{out:?}"
    );

    assert_eq!(db.snapshot(), before, "the schema or the rows changed");
    assert_eq!(o.show(&dead)["operation"]["status"], "dead");
    assert!(refused > 0 && empty > 0, "refused {refused}, empty {empty}");
}

#[test]
fn hostile_filters_on_sqlite() {
    let o = Oprec::migrated();
    let db = Sqlite::open(&o);
    every_filter_is_safe(&o, &db);
}

#[test]
fn hostile_filters_on_postgres() {
    let (db, o) = pg::Pg::fresh();
    every_filter_is_safe(&o, &db);
}
