//! Retention against a real PostgreSQL: `oprec retention show --json` says what is past its
//! retention and when the next removal is due, changing nothing; a worker's maintenance pass
//! then removes exactly that (with the attempts), and never a dead operation; the flags are
//! checked like every other input. Each test has its own schema.

mod common;
mod pg;

use common::Oprec;
use pg::Pg;
use serde_json::Value;

/// The preview's row for `kind` in `status`.
fn row<'a>(preview: &'a Value, kind: &str, status: &str) -> &'a Value {
    preview["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .find(|r| r["kind"] == kind && r["status"] == status)
        .unwrap_or_else(|| panic!("no row for {kind} {status} in {preview}"))
}

/// Succeeded, cancelled and dead operations, some of them finished 8 days ago.
fn finished_history(db: &Pg, o: &Oprec) {
    o.run(&[
        "enqueue",
        "--kind",
        "demo.noop",
        "--payload",
        "{}",
        "--count",
        "30",
    ])
    .ok();
    o.run(&[
        "enqueue",
        "--kind",
        "demo.flaky",
        "--payload",
        r#"{"fail_times": 5, "class": "permanent"}"#,
        "--count",
        "4",
    ])
    .ok();
    o.work_until_idle();
    let waiting: Vec<String> = (0..3)
        .map(|_| {
            o.run(&[
                "enqueue",
                "--kind",
                "demo.noop",
                "--payload",
                "{}",
                "--delay",
                "1h",
                "--json",
            ])
            .json()["id"]
                .as_str()
                .expect("id")
                .to_owned()
        })
        .collect();
    let mut cancel = vec!["cancel"];
    cancel.extend(waiting.iter().map(String::as_str));
    o.run(&cancel).ok();
    assert_eq!(
        db.int("SELECT count(*) FROM operations WHERE status = 'succeeded'"),
        30
    );
    assert_eq!(
        db.int("SELECT count(*) FROM operations WHERE status = 'dead'"),
        4
    );
    // Twenty successes, two cancellations and every death happened 8 days ago.
    db.int(
        "WITH old AS (SELECT id FROM operations WHERE status = 'succeeded' ORDER BY id LIMIT 20) \
         , moved AS (UPDATE operations SET terminal_at = now() - interval '8 days' \
                     WHERE id IN (SELECT id FROM old) RETURNING 1) \
         SELECT count(*) FROM moved",
    );
    db.int(
        "WITH old AS (SELECT id FROM operations WHERE status = 'cancelled' ORDER BY id LIMIT 2) \
         , moved AS (UPDATE operations SET terminal_at = now() - interval '8 days' \
                     WHERE id IN (SELECT id FROM old) RETURNING 1) \
         SELECT count(*) FROM moved",
    );
    db.int(
        "WITH moved AS (UPDATE operations SET terminal_at = now() - interval '8 days' \
                        WHERE status = 'dead' RETURNING 1) SELECT count(*) FROM moved",
    );
}

#[test]
fn show_says_what_is_past_retention_and_a_worker_removes_just_that() {
    let (db, o) = Pg::fresh();
    finished_history(&db, &o);

    let p = o.run(&["retention", "show", "--json"]).json();
    let week = 7 * 24 * 3600;
    let s = row(&p, "demo.noop", "succeeded");
    assert_eq!(s["operations"], 30);
    assert_eq!(s["keep_for_seconds"], week);
    assert_eq!(s["past_retention"], 20);
    // Some are due: the next removal is now.
    assert_eq!(s["next_removal_at"], p["at"]);
    let c = row(&p, "demo.noop", "cancelled");
    assert_eq!(c["operations"], 3);
    assert_eq!(c["past_retention"], 2);
    let d = row(&p, "demo.flaky", "dead");
    assert_eq!(d["operations"], 4);
    assert_eq!(d["keep_for_seconds"], Value::Null);
    assert_eq!(d["past_retention"], 0);
    assert_eq!(d["next_removal_at"], Value::Null);
    assert_eq!(p["past_retention"], 22);
    // The policy says its ages in seconds, as the rows do.
    assert_eq!(p["policy"]["default"]["succeeded_seconds"], week, "{p}");
    assert_eq!(p["policy"]["default"]["cancelled_seconds"], week, "{p}");

    // A longer age: nothing is due, and the next removal is the oldest's finish plus the age.
    let later = o
        .run(&["retention", "show", "--json", "--retain-succeeded", "30d"])
        .json();
    let s = row(&later, "demo.noop", "succeeded");
    assert_eq!(s["past_retention"], 0);
    let oldest: chrono::DateTime<chrono::Utc> =
        serde_json::from_value(s["oldest_finished_at"].clone()).unwrap();
    let next: chrono::DateTime<chrono::Utc> =
        serde_json::from_value(s["next_removal_at"].clone()).unwrap();
    assert_eq!(next, oldest + chrono::Duration::days(30));
    // The text form names the same figures.
    let text = o.run(&["retention", "show"]).ok().to_owned();
    assert!(
        text.contains("demo.noop") && text.contains("never by age") && text.contains("7 days"),
        "{text}"
    );
    assert!(
        text.contains("22 operations past their retention"),
        "{text}"
    );

    // The preview changed nothing.
    assert_eq!(db.int("SELECT count(*) FROM operations"), 37);

    // A worker's maintenance pass removes the 22 and their attempts, and nothing else.
    let attempts_before = db.int("SELECT count(*) FROM operation_attempts");
    o.work_until_idle();
    db.wait_for(
        "SELECT count(*) FROM operations",
        15,
        std::time::Duration::from_secs(30),
    );
    assert_eq!(
        db.int("SELECT count(*) FROM operations WHERE status = 'dead'"),
        4,
        "dead operations are never removed by age"
    );
    assert_eq!(
        db.int("SELECT count(*) FROM operation_attempts"),
        attempts_before - 20,
        "each removed success had one attempt; cancelled ones had none"
    );
    assert_eq!(
        db.int(
            "SELECT count(*) FROM operation_attempts a \
             WHERE NOT EXISTS (SELECT 1 FROM operations o WHERE o.id = a.operation_id)"
        ),
        0
    );
    let after = o.run(&["retention", "show", "--json"]).json();
    assert_eq!(after["past_retention"], 0);
    assert_eq!(row(&after, "demo.noop", "succeeded")["operations"], 10);
    // Stats read the kept counts: they follow the removal.
    let stats = o.run(&["stats", "--json"]).json();
    assert_eq!(stats["by_status"]["succeeded"], 10);
    assert_eq!(stats["by_status"]["cancelled"], 1);
    assert_eq!(stats["by_status"]["dead"], 4);
}

#[test]
fn retention_off_keeps_everything() {
    let (db, o) = Pg::fresh();
    finished_history(&db, &o);
    let p = o
        .run(&["retention", "show", "--json", "--retention", "off"])
        .json();
    assert_eq!(p["past_retention"], 0);
    assert_eq!(
        row(&p, "demo.noop", "succeeded")["keep_for_seconds"],
        Value::Null
    );
    o.run(&[
        "--transport",
        "poll",
        "worker",
        "--demo",
        "--exit-when-idle",
        "--retention",
        "off",
    ])
    .ok();
    assert_eq!(db.int("SELECT count(*) FROM operations"), 37);
}

#[test]
fn bad_retention_flags_are_bad_input() {
    let o = Oprec::new();
    o.run(&["retention", "show", "--retain-succeeded", "soon"])
        .bad_input("--retain-succeeded");
    o.run(&["retention", "show", "--retain-cancelled", "0s"])
        .bad_input("longer than zero");
    o.run(&[
        "retention",
        "show",
        "--retention",
        "off",
        "--retain-succeeded",
        "7d",
    ])
    .bad_input("--retention off");
    o.run(&["worker", "--demo", "--retention", "sometimes"])
        .bad_input("--retention");
    // Ages past 100 years are refused wherever the policy is read, before any cutoff is
    // computed (one of 100,000,000 days overflowed the clock; 3,000,000, the database's).
    o.run(&["retention", "show", "--retain-succeeded", "100000000d"])
        .bad_input("at most 36500 days");
    o.run(&["retention", "show", "--retain-cancelled", "3000000d"])
        .bad_input("--retain-cancelled");
    o.run(&["worker", "--demo", "--retain-succeeded", "100000000d"])
        .bad_input("at most 36500 days");
}

/// A process killed (and reaped) when the test ends, passed or not.
struct Running(std::process::Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn show_previews_the_policy_the_live_leader_applies() {
    let (db, o) = Pg::fresh();
    finished_history(&db, &o);
    // Without a live leader: the defaults, and said so.
    let p = o.run(&["retention", "show", "--json"]).json();
    assert_eq!(p["source"]["from"], "defaults");
    // A worker that keeps succeeded operations 30 days leads maintenance and publishes that.
    let _worker = Running(
        o.command(&[
            "--transport",
            "poll",
            "worker",
            "--demo",
            "--retain-succeeded",
            "30d",
            "--retain-cancelled",
            "off",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("worker"),
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let p = loop {
        let p = o.run(&["retention", "show", "--json"]).json();
        if p["source"]["from"] == "leader" || std::time::Instant::now() > deadline {
            break p;
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    };
    assert_eq!(p["source"]["from"], "leader", "{p}");
    assert!(p["source"]["holder"].is_string(), "{p}");
    let s = row(&p, "demo.noop", "succeeded");
    assert_eq!(s["keep_for_seconds"], 30 * 24 * 3600);
    assert_eq!(s["past_retention"], 0, "8 days old is within 30 days");
    assert_eq!(
        row(&p, "demo.noop", "cancelled")["keep_for_seconds"],
        Value::Null
    );
    assert_eq!(p["past_retention"], 0);
    // Flags preview another policy, and say so.
    let flagged = o
        .run(&["retention", "show", "--json", "--retain-succeeded", "1d"])
        .json();
    assert_eq!(flagged["source"]["from"], "flags");
    assert_eq!(flagged["past_retention"], 22);
}
