//! `oprec redrive` as a job, through the real binary: a paced re-drive onto a postponed
//! dependency (PostgreSQL) or a paused kind (SQLite) releases at its pace once the control lifts,
//! not all in one second, and its dry run names the control; a re-drive whose operations die
//! again brakes by itself and says why; `oprec redrive stop JOB` from another process and ctrl-c
//! both leave a job that `oprec redrive resume JOB` finishes, re-driving nothing twice; and the
//! dry run says whether it is safe (first and last death, distinct errors, a success since,
//! warnings).

mod background;
mod common;
mod pg;

use std::process::{Child, Output, Stdio};
use std::time::{Duration, Instant};

use background::Background;
use chrono::{DateTime, Utc};
use common::Oprec;
use pg::Pg;
use serde_json::Value;

/// `n` dead demo.flaky operations that died of `class` (one attempt allowed).
fn dead(o: &Oprec, n: u32, class: &str) {
    o.run(&[
        "enqueue",
        "--kind",
        "demo.flaky",
        "--payload",
        &format!(r#"{{"fail_times": 99, "class": "{class}"}}"#),
        "--count",
        &n.to_string(),
    ])
    .ok();
    o.run(&[
        "--transport",
        "poll",
        "worker",
        "--demo",
        "--demo-max-attempts",
        "1",
        "--concurrency",
        "32",
        "--exit-when-idle",
    ])
    .ok();
}

/// `oprec ARGS` started beside the test, its output captured.
fn spawn(o: &Oprec, args: &[&str]) -> Child {
    o.command(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start oprec")
}

/// The newest job, once it has released at least `released` (within 30 s).
fn running_job(o: &Oprec, released: u64) -> Value {
    let began = Instant::now();
    loop {
        let jobs = o.run(&["redrive", "status", "--json"]).json();
        if let Some(job) = jobs.as_array().and_then(|a| a.first())
            && job["state"] == "running"
            && job["released"].as_u64().unwrap() >= released
        {
            return job.clone();
        }
        assert!(
            began.elapsed() < Duration::from_secs(30),
            "no running job: {jobs}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Eligible times, sorted, as `ops list` prints them for pending operations.
fn eligible_times(o: &Oprec) -> Vec<DateTime<Utc>> {
    let ops = o
        .run(&[
            "ops", "list", "--status", "pending", "--limit", "10000", "--json",
        ])
        .json();
    let mut times: Vec<DateTime<Utc>> = ops
        .as_array()
        .unwrap()
        .iter()
        .map(|op| op["next_eligible_at"].as_str().unwrap().parse().unwrap())
        .collect();
    times.sort();
    times
}

/// At `per_second`, no more than `per_second` operations become eligible in any second.
fn assert_paced(times: &[DateTime<Utc>], per_second: usize) {
    let gap = chrono::Duration::microseconds(1_000_000 / per_second as i64);
    for w in times.windows(2) {
        assert!(w[1] - w[0] >= gap, "{} then {}", w[0], w[1]);
    }
    for w in times.windows(per_second + 1) {
        assert!(
            w[per_second] - w[0] >= chrono::Duration::seconds(1),
            "more than {per_second} within a second from {}",
            w[0]
        );
    }
}

#[test]
fn a_paced_redrive_onto_a_postponed_dependency_keeps_its_pace_after_it_lifts() {
    let (db, o) = Pg::fresh();
    dead(&o, 150, "transient");
    o.run(&[
        "postpone",
        "--dependency",
        "demo-provider",
        "--until",
        "4s",
        "--reason",
        "provider maintenance",
    ])
    .ok();
    let until: DateTime<Utc> = o.run(&["controls", "--json"]).json()[0]["until"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();

    // The dry run names the postponement that will delay the work.
    let dry = o.run(&["redrive", "--rate", "20/s", "--json"]).json();
    assert_eq!(dry["controls"][0]["action"], "postpone", "{dry}");
    assert_eq!(dry["controls"][0]["value"], "demo-provider");
    assert_eq!(dry["controls"][0]["operations"], 150);
    let text = o.run(&["redrive", "--rate", "20/s"]).ok().to_owned();
    assert!(
        text.contains("controls in force that will delay the work")
            && text.contains("postpone of dependency demo-provider until")
            && text.contains("holds back 150 of the matches"),
        "{text}"
    );

    let out = o
        .command(&["redrive", "--yes", "--all", "--rate", "20/s", "--json"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let done: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(done["redriven"], 150);
    assert_eq!(done["state"], "done");
    assert!(
        stderr(&out).contains(
            "waiting: 150 operations left are held back by the postpone of dependency demo-provider"
        ),
        "{}",
        stderr(&out)
    );

    // None became eligible while the postponement held them, and from its end on they become
    // eligible 50 ms apart: 20 a second, not 150 in its last second.
    let times = eligible_times(&o);
    assert_eq!(times.len(), 150);
    assert!(
        times[0] >= until - chrono::Duration::milliseconds(50),
        "the first at {} before the postponement's end {until}",
        times[0]
    );
    assert_paced(&times, 20);
    let span = (times[149] - times[0]).num_milliseconds();
    assert!(
        (7_450..8_500).contains(&span),
        "149 gaps of 50 ms: {span} ms"
    );
    assert_eq!(
        db.int("SELECT count(*) FROM operations WHERE redrive_count = 1 AND status = 'pending'"),
        150
    );
}

#[test]
fn a_paced_redrive_onto_a_paused_kind_waits_and_keeps_its_pace_on_sqlite() {
    let o = Oprec::migrated();
    dead(&o, 40, "transient");
    o.run(&["pause", "--kind", "demo.flaky"]).ok();
    let dry = o.run(&["redrive", "--json"]).json();
    assert_eq!(dry["controls"][0]["scope"], "kind", "{dry}");
    assert!(dry["controls"][0]["until"].is_null());

    let child = spawn(&o, &["redrive", "--yes", "--all", "--rate", "20/s"]);
    std::thread::sleep(Duration::from_secs(2));
    let job = o.run(&["redrive", "status", "--json"]).json()[0].clone();
    assert_eq!(job["state"], "running", "{job}");
    assert_eq!(job["released"], 0, "nothing released while the pause holds");
    assert!(eligible_times(&o).is_empty());

    o.run(&["resume", "--kind", "demo.flaky"]).ok();
    let lifted = Utc::now();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("held back by the pause of kind demo.flaky until resumed"),
        "{}",
        stderr(&out)
    );
    let times = eligible_times(&o);
    assert_eq!(times.len(), 40);
    assert!(
        times[0] >= lifted - chrono::Duration::seconds(1),
        "{}",
        times[0]
    );
    assert_paced(&times, 20);
    assert_eq!(
        o.run(&["redrive", "status", "--json"]).json()[0]["state"],
        "done"
    );
}

#[test]
fn a_redrive_with_no_pace_does_not_wait_for_a_pause() {
    // All at once has no pace to keep: the operations are released at once, and the claim holds
    // them back until the pause lifts.
    let o = Oprec::migrated();
    dead(&o, 10, "transient");
    o.run(&["pause", "--kind", "demo.flaky"]).ok();
    let began = Instant::now();
    let done = o.run(&["redrive", "--yes", "--all", "--json"]).json();
    assert_eq!(done["redriven"], 10);
    assert_eq!(done["state"], "done");
    assert!(
        began.elapsed() < Duration::from_secs(10),
        "{:?}",
        began.elapsed()
    );
    assert_eq!(eligible_times(&o).len(), 10);
}

#[test]
fn a_redrive_whose_operations_die_again_brakes_and_says_why() {
    let (db, o) = Pg::fresh();
    dead(&o, 600, "permanent");
    assert_eq!(
        db.int("SELECT count(*) FROM operations WHERE status = 'dead'"),
        600
    );
    let worker = Background::start(
        &o,
        &[
            "--transport",
            "poll",
            "worker",
            "--demo",
            "--concurrency",
            "16",
        ],
    );
    let began = Instant::now();
    let out = o
        .command(&["redrive", "--yes", "--all", "--rate", "10/s", "--json"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let took = began.elapsed();
    worker.stop();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("braked:")
            && err.contains("are dead again (more than half of a window of 50)")
            && err.contains("oprec redrive resume"),
        "{err}"
    );
    let done: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(done["state"], "braked", "{done}");
    let released = done["released_in_all"].as_u64().unwrap();
    assert!(
        (26..=80).contains(&released),
        "braked early: {released} released in {took:?}"
    );
    assert!(took < Duration::from_secs(15), "{took:?}");

    // It released nothing more after it braked, and says so wherever one looks.
    std::thread::sleep(Duration::from_millis(1_500));
    assert_eq!(
        db.int("SELECT count(*) FROM operations WHERE redrive_count = 1") as u64,
        released
    );
    let id = done["job"].as_str().unwrap();
    let job = o.run(&["redrive", "status", id, "--json"]).json();
    assert_eq!(job["state"], "braked");
    assert_eq!(job["released"].as_u64().unwrap(), released);
    assert!(
        job["reason"].as_str().unwrap().contains("dead again"),
        "{job}"
    );
    assert_eq!(job["resumable"], true);
    let shown = o.run(&["redrive", "status", id]).ok().to_owned();
    assert!(
        shown.contains("state:     braked") && shown.contains("why:       braked:"),
        "{shown}"
    );
    let audit = o.run(&["audit", "--json"]).json();
    assert_eq!(audit[0]["details"]["state"], "braked", "{audit}");
    assert_eq!(audit[0]["details"]["job"], id);
    assert!(
        audit[0]["details"]["why"]
            .as_str()
            .unwrap()
            .contains("more than half"),
        "{audit}"
    );
    let help = o.run(&["redrive", "--help"]).ok().to_owned();
    assert!(
        help.contains("more than half of a window of 50 operations it released are dead again"),
        "{help}"
    );
}

#[test]
fn a_redrive_stopped_from_another_process_resumes_and_redrives_nothing_twice() {
    let (db, o) = Pg::fresh();
    dead(&o, 100, "transient");
    let child = spawn(&o, &["redrive", "--yes", "--all", "--rate", "20/s"]);
    let job = running_job(&o, 1);
    let id = job["id"].as_str().unwrap().to_owned();

    // Its process is alive: resuming it elsewhere is refused.
    o.run(&["redrive", "resume", &id])
        .bad_input("is running in another process");
    let asked = o
        .run(&["redrive", "stop", &id, "--actor", "ops-oncall"])
        .ok()
        .to_owned();
    assert!(
        asked.contains(&format!("asked re-drive job {id} to stop")),
        "{asked}"
    );
    let out = child.wait_with_output().unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("stopped by ops-oncall after releasing")
            && err.contains(&format!("oprec redrive resume {id}")),
        "{err}"
    );
    let stopped = o.run(&["redrive", "status", &id, "--json"]).json();
    assert_eq!(stopped["state"], "stopped", "{stopped}");
    let released = stopped["released"].as_u64().unwrap();
    assert!((1..100).contains(&released), "{stopped}");
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(
        db.int("SELECT count(*) FROM operations WHERE redrive_count = 1") as u64,
        released,
        "nothing is released after the stop"
    );
    // A job that is not running has nothing to stop.
    o.run(&["redrive", "stop", &id])
        .bad_input("is not running (stopped)");

    let resumed = o.run(&["redrive", "resume", &id, "--json"]).json();
    assert_eq!(resumed["state"], "done", "{resumed}");
    assert_eq!(resumed["redriven"].as_u64().unwrap(), 100 - released);
    assert_eq!(resumed["released_in_all"], 100);
    assert_eq!(
        db.int("SELECT count(*) FROM operations WHERE redrive_count = 1 AND status = 'pending'"),
        100,
        "every one exactly once"
    );
    let audit = o.run(&["audit", "--json"]).json();
    let affected: Vec<u64> = audit
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["affected"].as_u64().unwrap())
        .collect();
    assert_eq!(affected, vec![100 - released, released], "{audit}");
    assert_eq!(audit[0]["details"]["resumed"], true);
    assert_eq!(audit[1]["details"]["state"], "stopped");
    o.run(&["redrive", "resume", &id])
        .bad_input("is done: it released all 100");
    o.run(&["redrive", "status", "no-such-job"])
        .bad_input("no re-drive job \"no-such-job\"");
}

#[test]
fn ctrl_c_leaves_a_job_to_resume() {
    let o = Oprec::migrated();
    dead(&o, 60, "transient");
    let child = spawn(&o, &["redrive", "--yes", "--all", "--rate", "20/s"]);
    let job = running_job(&o, 1);
    let id = job["id"].as_str().unwrap().to_owned();
    let _ = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status();
    let out = child.wait_with_output().unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!(
            "the job {id} is left to resume: `oprec redrive resume {id}`"
        )),
        "{err}"
    );
    let interrupted = o.run(&["redrive", "status", &id, "--json"]).json();
    assert_eq!(interrupted["state"], "interrupted", "{interrupted}");
    let released = interrupted["released"].as_u64().unwrap();
    assert!(released < 60, "{interrupted}");

    let resumed = o.run(&["redrive", "resume", &id, "--json"]).json();
    assert_eq!(resumed["state"], "done", "{resumed}");
    assert_eq!(resumed["redriven"].as_u64().unwrap(), 60 - released);
    let ops = o.run(&["ops", "list", "--limit", "1000", "--json"]).json();
    assert!(
        ops.as_array()
            .unwrap()
            .iter()
            .all(|op| op["status"] == "pending" && op["redrive_count"] == 1),
        "every one exactly once"
    );
}

#[test]
fn the_dry_run_says_whether_it_is_safe() {
    let (_db, o) = Pg::fresh();
    dead(&o, 30, "permanent");
    dead(&o, 20, "transient");

    let dry = o.run(&["redrive", "--json"]).json();
    assert_eq!(dry["matched"], 50);
    let groups = dry["groups"].as_array().unwrap();
    let permanent = groups.iter().find(|g| g["reason"] == "permanent").unwrap();
    assert_eq!(permanent["count"], 30);
    assert_eq!(permanent["dependency"], "demo-provider");
    let first: DateTime<Utc> = permanent["first_ended_at"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    let last: DateTime<Utc> = permanent["last_ended_at"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(first <= last, "{permanent}");
    assert!(permanent["recovered_at"].is_null(), "{permanent}");
    // Distinct errors with their counts, not samples of the same one.
    let errors: Vec<(u64, String)> = dry["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["count"].as_u64().unwrap(),
                e["last_error"]["summary"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        errors,
        vec![
            (
                30,
                "demo.flaky: simulated permanent failure on attempt 1".to_owned()
            ),
            (
                20,
                "demo.flaky: simulated transient failure on attempt 1".to_owned()
            ),
        ]
    );
    let warnings: Vec<&str> = dry["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["what"].as_str().unwrap())
        .collect();
    assert_eq!(
        warnings,
        vec!["permanent", "not_recovered", "not_recovered"]
    );
    let text = o.run(&["redrive"]).ok().to_owned();
    for needle in [
        "SUCCEEDED SINCE",
        "demo.flaky  permanent  permanent           30     demo-provider",
        "errors (distinct, the most frequent first):",
        "30     demo.flaky  demo.flaky: simulated permanent failure on attempt 1",
        "! 30 demo.flaky operations died of a permanent failure",
        "! no operation of dependency demo-provider has succeeded since the last of these 20 died",
    ] {
        assert!(text.contains(needle), "{needle}: {text}");
    }

    // The provider answers again: an operation of the same dependency succeeds.
    o.run(&["enqueue", "--kind", "demo.noop", "--payload", "{}"])
        .ok();
    o.work_until_idle();
    let dry = o.run(&["redrive", "--json"]).json();
    for g in dry["groups"].as_array().unwrap() {
        let at: DateTime<Utc> = g["recovered_at"].as_str().unwrap().parse().unwrap();
        assert!(at > last, "{g}");
    }
    let warnings: Vec<&str> = dry["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["what"].as_str().unwrap())
        .collect();
    assert_eq!(warnings, vec!["permanent"]);
    let text = o.run(&["redrive"]).ok().to_owned();
    assert!(
        text.contains("yes, ") && text.contains(" ago (20"),
        "{text}"
    );
}
