//! `oprec archive` and `oprec archive restore` through the binary: on PostgreSQL, dead operations
//! archived to a file and removed, then restored equal to the original rows (checked with SQL of
//! our own); a file that cannot be written removes nothing; a corrupted line restores nothing of
//! itself and everything else; a re-drive racing the archive loses nothing. On SQLite, the round
//! trip and the refusals (exit 2).

mod common;
mod pg;

use std::collections::BTreeSet;
use std::process::Stdio;
use std::time::Instant;

use common::Oprec;
use pg::Pg;
use serde_json::Value;

/// `n` dead demo.flaky operations (transient, one attempt allowed), worked poll-only.
fn dead(o: &Oprec, n: u32) {
    o.dead_flaky(n);
}

/// Every dead operation that ended more than 30 days ago, as PostgreSQL itself renders the rows:
/// every column, with its attempts (but their serial ids and claim tokens, which only a live claim's
/// late completion needs) and steps.
const AGED_ROWS: &str = "SELECT coalesce(jsonb_agg(x ORDER BY x->>'id'), '[]')::text FROM (
    SELECT to_jsonb(o) || jsonb_build_object(
        'attempts', (SELECT coalesce(jsonb_agg(to_jsonb(a) - 'id' - 'claim_token' ORDER BY a.id), '[]')
                     FROM operation_attempts a WHERE a.operation_id = o.id),
        'steps', (SELECT coalesce(jsonb_agg(to_jsonb(s) ORDER BY s.name), '[]')
                  FROM operation_steps s WHERE s.operation_id = o.id)) AS x
    FROM operations o
    WHERE o.status = 'dead' AND o.terminal_at < now() - interval '30 days') t";

/// The per-minute attempt counts (attempt_minutes), summed over shards.
const MINUTES: &str = "SELECT coalesce(string_agg(minute::text || ' ' || dependency || ' ' || a || ' ' \
    || f || ' ' || s, ', ' ORDER BY minute, dependency), '') FROM (SELECT minute, dependency, \
    sum(attempts) AS a, sum(failed) AS f, sum(snoozed) AS s FROM attempt_minutes GROUP BY 1, 2) t";

/// Moves the first `n` dead operations' ends 40 days back.
fn age(db: &Pg, n: u32) {
    db.int(&format!(
        "WITH aged AS (UPDATE operations SET terminal_at = terminal_at - interval '40 days',
                                              updated_at = updated_at - interval '40 days'
                       WHERE id IN (SELECT id FROM operations WHERE status = 'dead'
                                    ORDER BY id LIMIT {n})
                       RETURNING 1)
         SELECT count(*) FROM aged"
    ));
}

/// The file's lines as JSON.
fn lines(path: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The record ids and the kept ids of an archive file.
fn ids(path: &std::path::Path) -> (BTreeSet<String>, BTreeSet<String>) {
    let (mut records, mut kept) = (BTreeSet::new(), BTreeSet::new());
    for l in lines(path) {
        if let Some(id) = l["record"]["operation"]["id"].as_str() {
            records.insert(id.to_owned());
        } else {
            kept.insert(l["kept"].as_str().unwrap().to_owned());
        }
    }
    (records, kept)
}

#[test]
fn dead_operations_archived_removed_and_restored_equal_on_postgres() {
    let (db, o) = Pg::fresh();
    dead(&o, 300);
    let waiting = o.enqueue("demo.noop", "{}");
    age(&db, 250);
    let stepped: String = db
        .text(
            "SELECT id::text FROM operations WHERE terminal_at < now() - interval '30 days' \
             ORDER BY id LIMIT 1",
        )
        .unwrap();
    db.int(&format!(
        "WITH s AS (INSERT INTO operation_steps (operation_id, name, output, attempt, completed_at)
                    VALUES ('{stepped}', 'reserve', '{{\"seat\": 12}}', 1, now()) RETURNING 1)
         SELECT count(*) FROM s"
    ));
    let before = db.text(AGED_ROWS).unwrap();
    let attempts_before = db.int("SELECT count(*) FROM operation_attempts");
    let minutes_before = db.text(MINUTES).unwrap();
    let file = o.path("dead-2026-11.jsonl");
    let to = file.to_str().unwrap();

    // The dry run (and no --yes) counts, writes no file and changes nothing.
    let dry = o
        .run(&[
            "archive",
            "--status",
            "dead",
            "--until",
            "30d",
            "--to",
            to,
            "--dry-run",
            "--json",
        ])
        .json();
    assert_eq!(dry["matched"], 250, "{dry}");
    assert_eq!(dry["changed"], false);
    let text = o
        .run(&["archive", "--status", "dead", "--until", "30d", "--to", to])
        .ok()
        .to_owned();
    assert!(text.contains("250 dead operations match"), "{text}");
    assert!(text.contains("add --yes"), "{text}");
    assert!(!file.exists());

    let began = Instant::now();
    let done = o
        .run(&[
            "archive", "--status", "dead", "--until", "30d", "--to", to, "--batch", "100",
            "--actor", "ops-bot", "--yes", "--json",
        ])
        .json();
    eprintln!(
        "archived 250 operations in {:?} (batches of 100)",
        began.elapsed()
    );
    assert_eq!(done["written"], 250, "{done}");
    assert_eq!(done["removed"], 250);
    assert_eq!(done["kept"], 0);
    assert_eq!(done["batches"], 3);
    let (records, kept) = ids(&file);
    assert_eq!(records.len(), 250);
    assert!(kept.is_empty());
    assert!(records.contains(&stepped));
    assert_eq!(
        db.int("SELECT count(*) FROM operations WHERE status = 'dead'"),
        50
    );
    assert_eq!(db.text(AGED_ROWS).unwrap(), "[]");
    assert_eq!(
        db.int("SELECT count(*) FROM operation_attempts"),
        attempts_before - 250,
        "their attempts went with them"
    );
    assert_eq!(db.int("SELECT count(*) FROM operation_steps"), 0);
    assert_eq!(o.show(&waiting)["operation"]["status"], "pending");
    assert_eq!(
        db.text(
            "SELECT actor || ' ' || affected || ' ' || (details->>'file') FROM audit_log \
             WHERE action = 'archive'"
        )
        .unwrap(),
        format!("ops-bot 250 {to}")
    );

    // The file is never overwritten.
    o.run(&[
        "archive", "--status", "dead", "--until", "30d", "--to", to, "--yes",
    ])
    .bad_input("exists");

    let dry = o
        .run(&["archive", "restore", to, "--dry-run", "--json"])
        .json();
    assert_eq!(dry["restored"], 250, "{dry}");
    assert_eq!(dry["changed"], false);
    assert_eq!(db.text(AGED_ROWS).unwrap(), "[]");

    let back = o.run(&["archive", "restore", to, "--json"]).json();
    assert_eq!(back["restored"], 250, "{back}");
    assert_eq!(back["present"], 0);
    assert_eq!(
        db.text(AGED_ROWS).unwrap(),
        before,
        "every column, attempt and step as it was"
    );
    assert_eq!(
        db.int("SELECT count(*) FROM operation_attempts"),
        attempts_before
    );
    assert_eq!(
        db.text(MINUTES).unwrap(),
        minutes_before,
        "the per-minute counts are history: neither the archive nor the restore changes them"
    );

    let again = o.run(&["archive", "restore", to, "--json"]).json();
    assert_eq!(again["restored"], 0, "{again}");
    assert_eq!(again["present"], 250);
    assert_eq!(db.text(AGED_ROWS).unwrap(), before);
}

#[test]
fn a_file_that_cannot_be_written_removes_nothing() {
    let (db, o) = Pg::fresh();
    dead(&o, 20);
    let run = o.run(&[
        "archive",
        "--status",
        "dead",
        "--to",
        "/dev/full",
        "--append",
        "--yes",
    ]);
    assert_eq!(run.code, Some(1), "{run:#?}");
    assert!(run.stderr.contains("/dev/full"), "{}", run.stderr);
    assert!(
        run.stderr.contains("removing 0 operations"),
        "{}",
        run.stderr
    );
    assert_eq!(
        db.int("SELECT count(*) FROM operations WHERE status = 'dead'"),
        20
    );
    assert_eq!(
        db.int("SELECT count(*) FROM audit_log WHERE action = 'archive'"),
        0
    );
}

#[test]
fn a_corrupted_line_restores_nothing_of_itself_and_the_rest_is_restored() {
    let (db, o) = Pg::fresh();
    dead(&o, 5);
    let file = o.path("a.jsonl");
    let to = file.to_str().unwrap();
    o.run(&["archive", "--status", "dead", "--to", to, "--yes"])
        .ok();
    assert_eq!(db.int("SELECT count(*) FROM operations"), 0);
    let text = std::fs::read_to_string(&file).unwrap();
    let mut l: Vec<String> = text.lines().map(str::to_owned).collect();
    let id = |line: &str| -> String {
        let v: Value = serde_json::from_str(line).unwrap();
        v["record"]["operation"]["id"].as_str().unwrap().to_owned()
    };
    let (edited, torn) = (id(&l[1]), id(&l[3]));
    // Line 2 changed after it was written (still JSON), line 4 torn, and a stray line at the end.
    l[1] = l[1].replacen("\"attempt\":1", "\"attempt\":2", 1);
    let half = l[3].len() / 2;
    l[3].truncate(half);
    l.push("not json".to_owned());
    std::fs::write(&file, l.join("\n") + "\n").unwrap();

    let run = o.run(&["archive", "restore", to, "--json"]);
    assert_eq!(run.code, Some(1), "{run:#?}");
    let report: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(report["restored"], 3, "{report}");
    let bad: Vec<u64> = report["malformed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["line"].as_u64().unwrap())
        .collect();
    assert_eq!(bad, vec![2, 4, 6]);
    assert!(
        report["malformed"][0]["error"]
            .as_str()
            .unwrap()
            .contains("checksum mismatch"),
        "{report}"
    );
    for id in [edited, torn] {
        assert_eq!(
            db.int(&format!(
                "SELECT (SELECT count(*) FROM operations WHERE id = '{id}') + \
                        (SELECT count(*) FROM operation_attempts WHERE operation_id = '{id}')"
            )),
            0,
            "nothing half-restored for {id}"
        );
    }
    assert_eq!(db.int("SELECT count(*) FROM operations"), 3);
    let text = o.run(&["archive", "restore", to]);
    assert_eq!(text.code, Some(1));
    assert!(text.stdout.contains("line 4: malformed"), "{}", text.stdout);
    assert!(text.stdout.contains("3 already present"), "{}", text.stdout);
}

#[test]
fn a_redrive_racing_the_archive_loses_nothing() {
    let (db, o) = Pg::fresh();
    dead(&o, 400);
    let all: BTreeSet<String> = db
        .counts("SELECT id::text, 1::int8 FROM operations")
        .into_keys()
        .collect();
    let file = o.path("race.jsonl");
    let to = file.to_str().unwrap().to_owned();
    let archive = o
        .command(&[
            "archive", "--status", "dead", "--to", &to, "--batch", "1", "--yes", "--json",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let redrive = o
        .run(&["redrive", "--yes", "--all", "--batch", "1", "--json"])
        .json();
    let out = archive.wait_with_output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let done: Value = serde_json::from_slice(&out.stdout).unwrap();
    let (records, kept) = ids(&file);
    let in_db: BTreeSet<String> = db
        .counts("SELECT id::text, 1::int8 FROM operations")
        .into_keys()
        .collect();
    let archived: BTreeSet<String> = records.difference(&kept).cloned().collect();
    eprintln!(
        "re-drove {}, archived {}, kept {} (changed between the read and the removal)",
        redrive["redriven"], done["removed"], done["kept"]
    );
    assert_eq!(done["removed"].as_u64().unwrap(), archived.len() as u64);
    assert_eq!(done["kept"].as_u64().unwrap(), kept.len() as u64);
    assert!(kept.is_subset(&in_db), "a kept operation is in the store");
    assert!(archived.is_disjoint(&in_db));
    let union: BTreeSet<String> = archived.union(&in_db).cloned().collect();
    assert_eq!(union, all, "every operation is in the store or the file");
    assert_eq!(
        db.int("SELECT count(*) FROM operations WHERE status <> 'dead'"),
        redrive["redriven"].as_i64().unwrap(),
        "every re-driven operation is still in the store"
    );
    let back = o.run(&["archive", "restore", &to, "--json"]).json();
    assert_eq!(back["restored"].as_u64().unwrap(), archived.len() as u64);
    assert_eq!(back["skipped_kept"].as_u64().unwrap(), kept.len() as u64);
    assert_eq!(db.int("SELECT count(*) FROM operations"), 400);
}

#[test]
fn an_archive_that_matches_nothing_creates_no_file() {
    let o = Oprec::migrated();
    dead(&o, 2);
    let file = o.path("nothing.jsonl");
    let to = file.to_str().unwrap();
    // They died just now: none ended more than 30 days ago.
    let said = o
        .run(&[
            "archive", "--status", "dead", "--until", "30d", "--to", to, "--yes",
        ])
        .ok()
        .to_owned();
    assert!(said.contains("nothing matched"), "{said}");
    assert!(!file.exists(), "no file for an archive of nothing");
    let done = o
        .run(&[
            "archive", "--status", "dead", "--until", "30d", "--to", to, "--yes", "--json",
        ])
        .json();
    assert_eq!(done["written"], 0, "{done}");
    assert_eq!(done["changed"], false, "{done}");
    assert!(!file.exists(), "no file for an archive of nothing");
    assert_eq!(
        o.run(&["ops", "list", "--json"])
            .json()
            .as_array()
            .unwrap()
            .len(),
        2
    );
}

#[test]
fn sqlite_round_trip_and_refusals() {
    let o = Oprec::migrated();
    dead(&o, 3);
    let file = o.path("s.jsonl");
    let to = file.to_str().unwrap();
    let listed = o.run(&["ops", "list", "--json"]).json();
    let shown: Vec<Value> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|op| o.show(op["id"].as_str().unwrap()))
        .collect();
    assert_eq!(shown.len(), 3);

    o.run(&["archive", "--status", "pending", "--to", to, "--yes"])
        .bad_input("only ended operations are archived");
    // Clap's own usage errors: exit 2, naming the missing flag.
    for (args, flag) in [
        (&["archive", "--to", to, "--yes"][..], "--status"),
        (&["archive", "--status", "dead", "--yes"][..], "--to"),
    ] {
        let run = o.run(args);
        assert_eq!(run.code, Some(2), "{run:#?}");
        assert!(run.stderr.contains(flag), "{}", run.stderr);
    }
    o.run(&[
        "archive",
        "--status",
        "dead",
        "--to",
        "/no/such/folder/a.jsonl",
        "--yes",
    ])
    .bad_input("does not exist");
    o.run(&["archive", "restore", "missing.jsonl"])
        .bad_input("not a file");

    let done = o
        .run(&[
            "archive",
            "--status",
            "dead",
            "--until",
            "2099-01-01T00:00:00Z",
            "--to",
            to,
            "--yes",
            "--json",
        ])
        .json();
    assert_eq!(done["removed"], 3, "{done}");
    assert_eq!(
        o.run(&["ops", "list", "--json"]).json(),
        Value::Array(vec![])
    );
    o.run(&["archive", "--status", "dead", "--to", to, "--yes"])
        .bad_input("--append");
    let back = o.run(&["archive", "restore", to, "--json"]).json();
    assert_eq!(back["restored"], 3, "{back}");
    let again: Vec<Value> = shown
        .iter()
        .map(|s| o.show(s["operation"]["id"].as_str().unwrap()))
        .collect();
    assert_eq!(again, shown, "the same operations with the same attempts");

    // Re-driven since: the store's operation is in the way, and stays as it is.
    let id = shown[0]["operation"]["id"].as_str().unwrap();
    o.run(&["redrive", "--id", id, "--yes"]).ok();
    let run = o.run(&["archive", "restore", to, "--json"]);
    assert_eq!(run.code, Some(1), "{run:#?}");
    let report: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(report["present"], 2, "{report}");
    assert_eq!(report["conflicts"][0]["id"], id);
    assert!(
        report["conflicts"][0]["why"]
            .as_str()
            .unwrap()
            .contains("has not ended"),
        "{report}"
    );
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
    let dry = o.run(&["archive", "restore", to, "--dry-run"]);
    assert_eq!(dry.code, Some(1), "{dry:#?}");
    assert!(
        dry.stdout
            .contains(&format!("conflict: {id}: the store holds a different {id}")),
        "{}",
        dry.stdout
    );
    assert_eq!(o.show(id)["operation"]["status"], "dead");
    assert_ne!(o.show(id), shown[0], "never overwritten");
}
