//! Every command's `--help` works and never shows a password, even with one in the environment.

mod common;

const SECRET: &str = "s3cretpw";

#[test]
fn help_exits_0_and_hides_passwords() {
    let commands: &[&[&str]] = &[
        &[],
        &["migrate"],
        &["enqueue"],
        &["ops"],
        &["ops", "show"],
        &["ops", "list"],
        &["transport"],
        &["transport", "purge"],
        &["transport", "depth"],
        &["worker"],
        &["demo"],
        &["archive"],
        &["archive", "restore"],
    ];
    for args in commands {
        let out = common::bin()
            .args(*args)
            .arg("--help")
            .env("OPREC_DATABASE_URL", format!("postgres://u:{SECRET}@h/x"))
            .env(
                "OPREC_TRANSPORT_URL",
                format!("amqp://guest:{SECRET}@rabbit/%2f"),
            )
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {text}");
        assert!(text.contains("Usage: oprec"), "{args:?}: {text}");
        assert!(!text.contains(SECRET), "{args:?} shows a password: {text}");
        assert!(!String::from_utf8_lossy(&out.stderr).contains(SECRET));
    }
}

#[test]
fn help_documents_the_interface() {
    let out = common::bin().args(["worker", "--help"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    for flag in [
        "--concurrency",
        "--lease",
        "--drain-timeout",
        "--claim-ahead",
        "--claim-ahead-max",
        "--rewake-after",
        "--vanish-limit",
        "--code-version",
        "--demo",
        "--demo-ladder",
        "--demo-max-attempts",
        "--demo-timeout",
        "--exit-when-idle",
        "--database-url",
        "--transport",
        "memory://",
    ] {
        assert!(text.contains(flag), "worker --help lacks {flag}: {text}");
    }
}

#[test]
fn dashboard_help_states_the_security_rules() {
    let out = common::bin()
        .args(["dashboard", "--help"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    for needle in [
        "--allowed-host <NAME>",
        "--read-requires-token",
        "--allow-non-loopback",
        "DNS rebinding",
        "421",
        "Signing out ends the session",
        "429 with Retry-After",
        "A warning says so at start",
    ] {
        assert!(
            text.contains(needle),
            "dashboard --help lacks {needle}: {text}"
        );
    }
}

#[test]
fn archive_help_teaches_the_workflow() {
    let out = common::bin().args(["archive", "--help"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    for needle in [
        "--status",
        "--until",
        "--to",
        "--append",
        "--dry-run",
        "--yes",
        "--batch",
        "--kind",
        "never pending, running",
        "read back",
        "oprec archive --status dead --until 30d",
        "restore",
    ] {
        assert!(
            text.contains(needle),
            "archive --help lacks {needle}: {text}"
        );
    }
    let out = common::bin()
        .args(["archive", "restore", "--help"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    for needle in ["present", "conflict", "line number", "twice", "--dry-run"] {
        assert!(
            text.contains(needle),
            "archive restore --help lacks {needle}: {text}"
        );
    }
}

/// Every command a stated next action or decision names, `(oprec COMMAND [SUBCOMMAND] [--flag])`
/// in core's texts (the words an operator reads on a dead, held or reconciling operation),
/// exists: its `--help` works, and so does each flag it names.
#[test]
fn next_actions_name_commands_that_exist() {
    let core = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../core/src");
    let mut named = Vec::new();
    for entry in std::fs::read_dir(&core).expect("core's sources") {
        let path = entry.expect("entry").path();
        if path.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("source");
        for (i, _) in text.match_indices("(oprec ") {
            let inside = text[i + 7..].split(')').next().unwrap_or_default();
            named.push(inside.to_owned());
        }
    }
    assert!(
        named.len() >= 4,
        "core's texts name commands for release, re-drive and reconcile: {named:?}"
    );
    for command in &named {
        let words: Vec<&str> = command.split_whitespace().collect();
        let (path, flags): (Vec<&str>, Vec<&str>) = words.iter().partition(|w| !w.starts_with('-'));
        let out = common::bin().args(&path).arg("--help").output().unwrap();
        let help = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            out.status.code(),
            Some(0),
            "a next action names `oprec {command}`, which does not exist: {help}"
        );
        for flag in flags {
            assert!(
                help.contains(flag),
                "a next action names `oprec {command}`, whose help has no {flag}: {help}"
            );
        }
    }
}
