//! `oprec redrive` on SQLite: the dry run (and no `--yes`) changes nothing; in place and as new;
//! pacing by rate and by spread; a new deadline; and a re-drive interrupted half way, run again,
//! re-drives the rest and nothing twice.

mod common;

use std::collections::HashMap;
use std::process::Stdio;
use std::time::Duration;

use common::Oprec;
use serde_json::Value;

/// Every operation, as `ops list --json` prints them.
fn all(o: &Oprec) -> Vec<Value> {
    o.run(&["ops", "list", "--limit", "10000", "--json"])
        .json()
        .as_array()
        .unwrap()
        .clone()
}

fn count(o: &Oprec, status: &str) -> usize {
    all(o).iter().filter(|op| op["status"] == status).count()
}

/// `n` dead demo.flaky operations (transient, one attempt allowed).
fn dead(o: &Oprec, n: u32) {
    o.dead_flaky(n);
    assert_eq!(count(o, "dead"), n as usize);
}

fn time(v: &Value) -> chrono::DateTime<chrono::Utc> {
    v.as_str().unwrap().parse().unwrap()
}

#[test]
fn without_yes_nothing_changes_and_with_it_the_dead_come_back_in_place() {
    let o = Oprec::migrated();
    dead(&o, 4);
    let pending = o.enqueue("demo.noop", "{}");

    let plain = o.run(&["redrive"]);
    let text = plain.ok();
    assert!(text.contains("4 dead operations match"), "{text}");
    assert!(text.contains("nothing was changed: add --yes"), "{text}");
    assert!(text.contains("not terminal, so refused: 1"), "{text}");
    let dry = o.run(&["redrive", "--dry-run"]).ok().to_owned();
    assert!(dry.contains("nothing was changed (dry run)"), "{dry}");
    assert_eq!(count(&o, "dead"), 4);
    assert_eq!(
        o.run(&["audit", "--json"]).json(),
        Value::Array(vec![]),
        "a dry run is no action"
    );

    // Applying with no filter needs the word for "all of them", and changes nothing without it.
    o.run(&["redrive", "--yes"]).bad_input(
        "redrive with no filter would touch every dead operation: narrow it (--kind, --class, \
         --error-contains, --dependency or --id) or add --all to mean all of them",
    );
    assert_eq!(count(&o, "dead"), 4);
    let done = o.run(&["redrive", "--yes", "--all", "--json"]).json();
    assert_eq!(done["redriven"], 4);
    assert_eq!(done["not_terminal"], 1);
    let ops = all(&o);
    for op in ops.iter().filter(|op| op["kind"] == "demo.flaky") {
        assert_eq!(op["status"], "pending");
        assert_eq!(op["attempt"], 0);
        assert_eq!(op["redrive_count"], 1);
        assert!(op["terminal_reason"].is_null() && op["terminal_at"].is_null());
    }
    let untouched = ops.iter().find(|op| op["id"] == pending.as_str()).unwrap();
    assert_eq!(untouched["redrive_count"], 0, "a pending one is refused");
    assert_eq!(
        o.run(&["redrive", "--yes", "--all", "--json"]).json()["redriven"],
        0
    );
    let audit = o.run(&["audit", "--json"]).json();
    assert_eq!(audit.as_array().unwrap().len(), 1, "{audit}");
    assert_eq!(audit[0]["affected"], 4);
}

#[test]
fn as_new_links_copies_and_leaves_the_dead_as_they_were() {
    let o = Oprec::migrated();
    dead(&o, 3);
    let done = o
        .run(&[
            "redrive",
            "--as-new",
            "--extend-deadline",
            "2h",
            "--yes",
            "--all",
            "--json",
        ])
        .json();
    assert_eq!(done["redriven"], 3);
    assert_eq!(done["mode"], "as_new");
    let ops = all(&o);
    let dead: Vec<&Value> = ops.iter().filter(|op| op["status"] == "dead").collect();
    let new: Vec<&Value> = ops.iter().filter(|op| op["status"] == "pending").collect();
    assert_eq!((dead.len(), new.len()), (3, 3));
    for n in &new {
        assert!(dead.iter().any(|d| d["id"] == n["redrive_of"]), "{n}");
        let deadline = time(&n["give_up_at"]) - time(&n["created_at"]);
        assert_eq!(deadline.num_minutes(), 120, "{n}");
    }
    assert_eq!(
        o.run(&["redrive", "--as-new", "--yes", "--all", "--json"])
            .json()["redriven"],
        0,
        "a dead operation already re-driven as new is not taken again"
    );
}

#[test]
fn rate_and_spread_stagger_the_eligible_times() {
    let o = Oprec::migrated();
    dead(&o, 11);
    o.run(&[
        "redrive", "--spread", "10s", "--limit", "6", "--yes", "--all",
    ])
    .ok();
    let mut times: Vec<_> = all(&o)
        .iter()
        .filter(|op| op["status"] == "pending")
        .map(|op| time(&op["next_eligible_at"]))
        .collect();
    times.sort();
    assert_eq!(times.len(), 6, "--limit caps the total");
    let gaps: Vec<i64> = times
        .windows(2)
        .map(|w| (w[1] - w[0]).num_milliseconds())
        .collect();
    assert_eq!(
        gaps,
        vec![2_000; 5],
        "6 over 10 s: 2 s apart, the last at 10 s"
    );

    let first: Vec<Value> = all(&o)
        .into_iter()
        .filter(|op| op["status"] == "pending")
        .map(|op| op["id"].clone())
        .collect();
    let text = o
        .run(&["redrive", "--rate", "120/m", "--yes", "--all"])
        .ok()
        .to_owned();
    assert!(
        text.contains("re-drove 5 operations") && text.contains("one every 500ms"),
        "{text}"
    );
    let mut second: Vec<_> = all(&o)
        .iter()
        .filter(|op| op["status"] == "pending" && !first.contains(&op["id"]))
        .map(|op| time(&op["next_eligible_at"]))
        .collect();
    second.sort();
    let gaps: Vec<i64> = second
        .windows(2)
        .map(|w| (w[1] - w[0]).num_milliseconds())
        .collect();
    assert_eq!(gaps, vec![500; 4], "120/m: 500 ms apart");
}

#[test]
fn an_interrupted_redrive_run_again_redrives_the_rest_and_nothing_twice() {
    let o = Oprec::migrated();
    dead(&o, 1_600);
    // The first run stops after 700 (two batches and part of a third), as if interrupted.
    assert_eq!(
        o.run(&["redrive", "--yes", "--all", "--limit", "700", "--json"])
            .json()["redriven"],
        700
    );
    // The second is interrupted for real: ctrl-c a moment after it starts, in small batches so
    // that the interrupt most likely lands between two of them (it may also land before the
    // first, or after the last; every case must end the same).
    let child = o
        .command(&[
            "redrive", "--yes", "--all", "--batch", "3", "--rate", "1000/s",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(400));
    let _ = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let between = count(&o, "pending");
    assert!((700..=1_600).contains(&between), "{between}");
    match out.status.code() {
        Some(0) => eprintln!("the run finished before the interrupt"),
        Some(1) => {
            assert!(
                stderr.contains("interrupted after re-driving")
                    && stderr.contains("run the same command again"),
                "{stderr}"
            );
            eprintln!("interrupted after re-driving {} of 900", between - 700);
        }
        other => {
            assert!(other.is_none(), "{other:?} {stderr}");
            eprintln!("killed before its handler was in place: {}", out.status);
        }
    }

    // Run again: the rest, once.
    let rest = o.run(&["redrive", "--yes", "--all", "--json"]).json();
    assert_eq!(rest["redriven"].as_u64().unwrap() as usize, 1_600 - between);
    let ops = all(&o);
    assert_eq!(ops.len(), 1_600);
    let mut by_count: HashMap<u64, usize> = HashMap::new();
    for op in &ops {
        assert_eq!(op["status"], "pending");
        *by_count
            .entry(op["redrive_count"].as_u64().unwrap())
            .or_default() += 1;
    }
    assert_eq!(
        by_count,
        HashMap::from([(1, 1_600)]),
        "every one exactly once"
    );
    let audit = o.run(&["audit", "--json"]).json();
    let total: u64 = audit
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["affected"].as_u64().unwrap())
        .sum();
    assert_eq!(total, 1_600, "the audit log accounts for each: {audit}");
}

/// A re-drive as new of a copy that died again keeps the lineage's first operation as its
/// effect key, so a provider that deduplicates on it never applies the effect twice.
#[test]
fn a_copy_of_a_copy_keeps_the_original_effect_key() {
    let o = Oprec::migrated();
    o.dead_flaky(1);
    let die_again = || {
        o.run(&[
            "--transport",
            "poll",
            "worker",
            "--demo",
            "--demo-max-attempts",
            "1",
            "--exit-when-idle",
        ])
        .ok();
    };
    let original = all(&o)[0]["id"].as_str().unwrap().to_owned();
    o.run(&["redrive", "--as-new", "--all", "--yes"]).ok();
    die_again();
    let child = all(&o)
        .into_iter()
        .find(|op| op["redrive_of"] == original.as_str())
        .expect("the first copy");
    assert_eq!(child["status"], "dead", "{child}");
    let child = child["id"].as_str().unwrap().to_owned();
    o.run(&["redrive", "--as-new", "--all", "--yes"]).ok();
    let grandchild = all(&o)
        .into_iter()
        .find(|op| op["redrive_of"] == child.as_str())
        .expect("the copy of the copy");
    assert_eq!(
        grandchild["redrive_root"],
        original.as_str(),
        "{grandchild}"
    );
    let shown = o
        .run(&["ops", "show", grandchild["id"].as_str().unwrap()])
        .ok()
        .to_owned();
    let key = shown
        .lines()
        .find(|l| l.starts_with("effect key"))
        .unwrap_or_else(|| panic!("{shown}"));
    assert!(
        key.ends_with(&format!("oprec-{original}")),
        "the original's key, not the parent's ({child}): {key}"
    );
}

/// On a terminal, the re-drive and the quarantine say what they are doing while they count and
/// group the matches (a line cleared when the review is ready); piped, they print no such line.
/// The terminal is a pseudo-terminal made by `script` (util-linux).
#[test]
fn planning_shows_a_progress_line_on_a_terminal_only() {
    let o = Oprec::migrated();
    o.dead_flaky(3);
    let on_terminal = |args: &str| {
        let out = std::process::Command::new("script")
            .args([
                "-qec",
                &format!("{} {args}", env!("CARGO_BIN_EXE_oprec")),
                "/dev/null",
            ])
            .env("OPREC_DATABASE_URL", &o.url)
            .env_remove("RUST_LOG")
            .env_remove("OPREC_LOG_FORMAT")
            .env_remove("COLUMNS")
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("script (util-linux) is required: {e}"));
        assert!(out.status.success(), "{out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let shown = on_terminal("redrive");
    assert!(
        shown.contains("planning the re-drive: counting and grouping the matches"),
        "{shown}"
    );
    assert!(
        shown.contains("dry run: 3 dead operations match"),
        "{shown}"
    );
    let shown = on_terminal("quarantine --kind demo.noop --reason why");
    assert!(shown.contains("counting"), "{shown}");
    let piped = o.run(&["redrive"]);
    assert!(!piped.stderr.contains("planning"), "{}", piped.stderr);
    assert!(!piped.stdout.contains("planning"), "{}", piped.stdout);
}
