//! Exit codes, for every command: 0 success (a dry run included), 1 a runtime failure (a store
//! or broker that does not answer, a schema not migrated, an operation not found), 2 bad usage
//! or bad input, with one line that says what was wrong. The walk below names a bad input for
//! every subcommand the binary lists, and fails when a new one has none.

mod common;

use std::collections::BTreeSet;

use common::Oprec;

/// A database URL that cannot parse (an unencoded `/` in the password): bad input, whatever the
/// command, never a connection attempt.
const BAD_DATABASE_URL: &str = "postgres://app:pa55/word@127.0.0.1:1/test";

/// Each subcommand (its path of names), a bad input for it, and what the one line says.
fn bad_inputs() -> Vec<(&'static str, Vec<&'static str>, &'static str)> {
    let bad_url = |cmd: &'static [&'static str]| {
        let mut args = vec!["--database-url", BAD_DATABASE_URL];
        args.extend_from_slice(cmd);
        args
    };
    vec![
        ("migrate", bad_url(&["migrate"]), "must percent-encode"),
        (
            "enqueue",
            vec![
                "enqueue",
                "--kind",
                "demo.noop",
                "--payload",
                "{}",
                "--delay",
                "5 parsecs",
            ],
            "--delay",
        ),
        ("ops show", vec!["ops", "show", "42"], "not an operation id"),
        (
            "ops list",
            vec!["ops", "list", "--reason", "tired"],
            "unknown terminal reason",
        ),
        (
            "transport purge",
            vec!["transport", "purge", "--yes"],
            "no broker to purge",
        ),
        ("transport depth", vec!["transport", "depth"], "no broker"),
        (
            "worker",
            vec!["worker", "--demo", "--lease", "soon"],
            "--lease",
        ),
        ("demo", bad_url(&["demo"]), "the database URL"),
        (
            "redrive",
            vec!["redrive", "--rate", "fast"],
            "is not a rate",
        ),
        (
            "redrive status",
            vec!["redrive", "status", "nope"],
            "no re-drive job",
        ),
        (
            "redrive stop",
            vec!["redrive", "stop", "nope"],
            "no re-drive job",
        ),
        (
            "redrive resume",
            vec!["redrive", "resume", "nope"],
            "no re-drive job",
        ),
        (
            "pause",
            vec!["pause", "--class", "sometimes"],
            "unknown failure class",
        ),
        (
            "resume",
            vec!["resume", "--class", "sometimes"],
            "unknown failure class",
        ),
        (
            "postpone",
            vec!["postpone", "--dependency", "bank", "--until", "yesterday"],
            "--until",
        ),
        ("controls", bad_url(&["controls"]), "the database URL"),
        (
            "quarantine",
            vec!["quarantine", "--class", "sometimes", "--reason", "r"],
            "unknown failure class",
        ),
        (
            "release",
            vec!["release", "--yes"],
            "add --all to mean all of them",
        ),
        ("cancel", vec!["cancel", "--yes"], "add --all"),
        (
            "reconcile list",
            vec!["reconcile", "list", "--limit", "0"],
            "--limit",
        ),
        (
            "reconcile resolve",
            vec!["reconcile", "resolve", "nope", "--applied"],
            "not an operation id",
        ),
        ("stats", bad_url(&["stats"]), "must percent-encode"),
        (
            "archive",
            vec!["archive", "--status", "pending", "--to", "x.jsonl"],
            "only ended operations are archived",
        ),
        (
            "archive restore",
            vec!["archive", "restore", "/nonexistent/archive.jsonl"],
            "is not a file",
        ),
        ("audit", vec!["audit", "--limit", "0"], "--limit"),
        (
            "alerts",
            vec!["alerts", "--status", "lost"],
            "--status: unknown alert status",
        ),
        ("schedules", bad_url(&["schedules"]), "the database URL"),
        (
            "limit",
            vec!["limit", "--kind", "k", "--running", "0"],
            "oprec pause --kind k",
        ),
        ("limits", bad_url(&["limits"]), "the database URL"),
        (
            "retention show",
            vec!["retention", "show", "--retain-succeeded", "a week"],
            "--retain-succeeded",
        ),
        ("workers", bad_url(&["workers"]), "the database URL"),
        (
            "dashboard",
            vec!["dashboard", "--listen", "nope"],
            "is not an address",
        ),
        (
            "import",
            vec![
                "import",
                "--from",
                "kafka://x",
                "--list",
                "l",
                "--kind",
                "demo.noop",
            ],
            "unsupported --from",
        ),
        ("bench", vec!["bench"], "oprec bench measures PostgreSQL"),
        (
            "simulate outage",
            vec!["simulate", "outage", "--ops", "0"],
            "--ops must be at least 1",
        ),
    ]
}

/// The subcommands `oprec ... --help` lists under "Commands:", as paths (`ops list`), groups
/// walked down to their leaves; a group that runs by itself (`archive`) is listed too.
fn subcommands(path: &[String]) -> BTreeSet<String> {
    let out = common::bin()
        .args(path)
        .arg("--help")
        .output()
        .expect("run oprec --help");
    let help = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut found = BTreeSet::new();
    let Some(start) = help.find("Commands:") else {
        return found;
    };
    for line in help[start..].lines().skip(1) {
        if !line.starts_with("  ") {
            break;
        }
        let Some(name) = line.split_whitespace().next() else {
            continue;
        };
        if name == "help" {
            continue;
        }
        let mut child = path.to_vec();
        child.push(name.to_owned());
        let below = subcommands(&child);
        // A command that also has subcommands of its own is walked as both.
        if below.is_empty() || matches!(name, "archive" | "redrive") {
            found.insert(child.join(" "));
        }
        found.extend(below);
    }
    found
}

#[test]
fn every_subcommand_exits_2_on_bad_input_with_one_clear_line() {
    let o = Oprec::migrated();
    let cases = bad_inputs();
    let walked: BTreeSet<String> = cases.iter().map(|(c, _, _)| c.to_string()).collect();
    let listed = subcommands(&[]);
    assert_eq!(
        listed, walked,
        "every subcommand the binary lists has a bad-input case here"
    );
    for (command, args, needle) in &cases {
        let run = o.run(args);
        assert_eq!(run.code, Some(2), "{command}: {args:?}: {run:#?}");
        run.bad_input(needle);
        assert!(
            !run.stderr.contains("pa55"),
            "{command}: the password shown: {}",
            run.stderr
        );
    }
    // Clap's own usage errors exit 2 as well.
    assert_eq!(o.run(&["stats", "--no-such-flag"]).code, Some(2));
    assert_eq!(o.run(&["frobnicate"]).code, Some(2));
}

/// A dry run is a success: every bulk command without --yes says what it would do, changes
/// nothing and exits 0, purge included.
#[test]
fn dry_runs_exit_0() {
    let o = Oprec::migrated();
    for args in [
        &["redrive"][..],
        &["quarantine", "--kind", "demo.noop", "--reason", "r"][..],
        &["release"][..],
        &["cancel", "--kind", "demo.noop"][..],
        &["reconcile", "resolve", "--applied"][..],
        &["archive", "--status", "dead", "--to", "x.jsonl"][..],
    ] {
        let run = o.run(args);
        assert_eq!(run.code, Some(0), "{args:?}: {run:#?}");
    }
    // A real broker (the suite's, which may name its logical database), under a key prefix of
    // this test's own.
    let redis = std::env::var("OPREC_TEST_REDIS_URL")
        .unwrap_or_else(|_| "redis://127.0.0.1:6379".to_owned());
    let prefix = format!("oprec:test:exit:{}", uuid::Uuid::now_v7().simple());
    let _guard = common::RedisPrefixGuard {
        url: redis.clone(),
        prefix: prefix.clone(),
    };
    let transport = format!("{redis}?prefix={prefix}");
    let purge = o.run(&["--transport", &transport, "transport", "purge"]);
    assert_eq!(purge.code, Some(0), "{purge:#?}");
    assert!(purge.stdout.contains("--yes"), "{purge:#?}");
}

/// Runtime failures exit 1: a database that refuses connections, a broker nobody listens on, a
/// schema not migrated, an operation that is not there.
#[test]
fn runtime_failures_exit_1() {
    let down = Oprec::with_url("postgres://app:hunter2@127.0.0.1:9/nowhere");
    for args in [
        &["stats"][..],
        &["ops", "list"][..],
        &["redrive", "--dry-run"][..],
        &["cancel", "0194c2a1-7b3e-7c4d-9a2b-3f1e5d6c7b8a"][..],
        &["pause", "--kind", "demo.noop"][..],
    ] {
        let run = down.run(args);
        assert_eq!(run.code, Some(1), "{args:?}: {run:#?}");
        assert!(run.stderr.contains("Connection refused"), "{}", run.stderr);
        assert!(!run.stderr.contains("hunter2"), "{}", run.stderr);
    }
    let o = Oprec::migrated();
    let broker = o.run(&["--transport", "redis://127.0.0.1:9", "transport", "depth"]);
    assert_eq!(broker.code, Some(1), "{broker:#?}");
    let missing = o.run(&["ops", "show", "0194c2a1-7b3e-7c4d-9a2b-3f1e5d6c7b8a"]);
    assert_eq!(missing.code, Some(1), "{missing:#?}");
    assert!(missing.stderr.contains("not found"), "{}", missing.stderr);
    let unmigrated = Oprec::new();
    let run = unmigrated.run(&["stats"]);
    assert_eq!(run.code, Some(1), "{run:#?}");
    assert!(
        run.stderr.contains("run `oprec migrate` first"),
        "{}",
        run.stderr
    );
}
