//! Soak: 10,000 `demo.effect` operations under two worker processes (PostgreSQL + Redis Streams),
//! one of them SIGKILLed at random every few seconds and restarted at once. Each attempt pauses
//! 25 ms before its effect and 25 ms after it, so kills cut attempts on both sides of the effect.
//!
//! Every operation ends succeeded exactly once, with exactly one effect row under its effect key;
//! the attempt history has one row per attempt, every attempt but the last `vanished`, and the
//! vanished attempts of each killed worker are exactly the claims it held when it died (counted
//! once its database sessions have ended, before the lease of 3 s can expire).

#![cfg(unix)]

mod common;
mod rig;

use std::collections::BTreeMap;
use std::os::unix::process::ExitStatusExt;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use rig::{Proc, Rig, RigKind, SIGKILL, poll};

const OPS: i64 = 10_000;
/// The whole run, kills included, must end within this.
const RUN_LIMIT: Duration = Duration::from_secs(300);

/// A small xorshift generator: the kill schedule, reproducible from the printed seed.
struct Dice(u64);

impl Dice {
    fn new() -> Dice {
        let seed = std::env::var("OPREC_SOAK_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| {
                SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .map(|d| d.as_nanos() as u64)
                    .unwrap_or(1)
            });
        Dice(seed | 1)
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A whole number in `range` (inclusive).
    fn between(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next() % (hi - lo + 1)
    }
}

/// Worker flags: leases long enough to count a dead worker's claims before they expire, a vanish
/// limit no random run reaches (an operation cut three times in a row is not a bug), and a
/// re-wake interval that does not republish the whole backlog every second.
const FLAGS: [&str; 9] = [
    "worker",
    "--demo",
    "--lease",
    "3s",
    "--concurrency",
    "16",
    "--vanish-limit",
    "10",
    "--rewake-after",
];
const REWAKE_AFTER: &str = "5s";

fn ended(rig: &Rig) -> i64 {
    rig.scalar("SELECT count(*) FROM operations WHERE status IN ('succeeded', 'dead', 'cancelled')")
}

#[test]
fn ten_thousand_effects_under_random_kills() {
    let mut dice = Dice::new();
    let seed = dice.0;
    let rig = Rig::new(RigKind::PostgresRedis, "soak");
    let enqueued = rig.oprec_json(&[
        "enqueue",
        "--kind",
        "demo.effect",
        "--payload",
        r#"{"sleep_before_ms": 25, "sleep_after_ms": 25}"#,
        "--count",
        &OPS.to_string(),
        "--json",
    ]);
    assert_eq!(enqueued["created"], OPS, "{enqueued}");
    let started = Instant::now();

    // Incarnations are named without dashes (the worker id is "$HOSTNAME-$PID").
    let mut incarnation = 0;
    let mut start = |slot: char| -> (String, Proc) {
        incarnation += 1;
        let name = format!("soak{slot}{incarnation}");
        let w = rig.spawn(&name, &[&FLAGS[..], &[REWAKE_AFTER]].concat());
        (name, w)
    };
    let mut workers = Vec::new();
    for slot in ['a', 'b'] {
        let (name, mut w) = start(slot);
        // Start one at a time: both create `demo_effects` at start-up.
        w.wait_until_up();
        workers.push((slot, name, w));
    }

    // Claims each killed worker held when it died.
    let mut cut: BTreeMap<String, i64> = BTreeMap::new();
    loop {
        let pause = Duration::from_millis(dice.between(1500, 4000));
        let done = poll(pause, Duration::from_millis(100), || {
            (ended(&rig) == OPS).then_some(())
        });
        if done.is_some() {
            break;
        }
        assert!(
            started.elapsed() < RUN_LIMIT,
            "the soak did not end in {RUN_LIMIT:?} (seed {seed}): {:?}",
            rig.statuses()
        );
        let i = (dice.next() % 2) as usize;
        let (slot, name, w) = &mut workers[i];
        assert_eq!(w.sigkill().signal(), Some(SIGKILL), "{name}");
        // A claim or a completion the worker sent as it died may still commit: its sessions end
        // only once their last statement has (one inside demo.effect's fenced transaction adds
        // its operation to the name). Count once they are gone; the lease (3 s, renewed
        // every second) cannot expire for two seconds yet.
        let gone = poll(
            Duration::from_millis(2000),
            Duration::from_millis(20),
            || {
                let sessions = rig.scalar(&format!(
                    "SELECT count(*) FROM pg_stat_activity WHERE application_name = '{name}' \
                     OR application_name LIKE '{name} op %'"
                ));
                (sessions == 0).then_some(())
            },
        );
        assert!(gone.is_some(), "{name}'s sessions outlived it by 2 s");
        let held = rig.scalar(&format!(
            "SELECT count(*) FROM operations WHERE status = 'running' AND worker_id LIKE '{name}-%'"
        ));
        cut.insert(name.clone(), held);
        let slot = *slot;
        workers[i] = {
            let (name, w) = start(slot);
            (slot, name, w)
        };
    }
    let run = started.elapsed();
    for (_, name, w) in &mut workers {
        // One restarted a moment ago may not have its signal handlers yet.
        w.wait_until_up();
        w.sigterm();
        let Some(status) = w.wait_for_exit(Duration::from_secs(30)) else {
            panic!("{name} did not stop after SIGTERM");
        };
        assert!(status.success(), "{name}: {status}");
    }

    // Nothing lost: every enqueued operation is there, and succeeded.
    assert_eq!(
        rig.statuses(),
        [("succeeded".to_owned(), OPS)],
        "seed {seed}"
    );
    let lost = OPS - ended(&rig);
    // One effect per operation, under the effect key it records as its remote id.
    let effects = rig.scalar("SELECT count(*) FROM demo_effects");
    let matched = rig.scalar(
        "SELECT count(*) FROM operations o JOIN demo_effects e ON e.effect_key = o.remote_id",
    );
    assert_eq!((effects, matched), (OPS, OPS), "seed {seed}");
    let duplicates = effects - OPS;
    // The history: one row per attempt, the last succeeded, every earlier one vanished.
    let missing_rows = rig.scalar(
        "SELECT count(*) FROM operations o WHERE o.attempt <> \
         (SELECT count(DISTINCT a.attempt) FROM operation_attempts a WHERE a.operation_id = o.id)",
    );
    assert_eq!(
        missing_rows, 0,
        "operations whose attempts 1..n are not all recorded"
    );
    let wrong = rig.scalar(
        "SELECT count(*) FROM operation_attempts a JOIN operations o ON o.id = a.operation_id \
         WHERE (a.attempt < o.attempt AND a.outcome <> 'vanished') \
            OR (a.attempt = o.attempt AND a.outcome <> 'succeeded')",
    );
    assert_eq!(
        wrong, 0,
        "an attempt that is neither the last success nor vanished"
    );
    let attempts = rig.scalar("SELECT count(*) FROM operation_attempts");
    let vanished = rig.scalar("SELECT count(*) FROM operation_attempts WHERE outcome = 'vanished'");
    assert_eq!(attempts, OPS + vanished);
    // Every vanished attempt was a claim a killed worker held when it died, and each such claim
    // became exactly one vanished attempt.
    let by_worker: BTreeMap<String, i64> = rig
        .counts(
            "SELECT split_part(worker_id, '-', 1), count(*) FROM operation_attempts \
             WHERE outcome = 'vanished' GROUP BY 1",
        )
        .into_iter()
        .collect();
    let expected: BTreeMap<String, i64> = cut
        .iter()
        .filter(|(_, n)| **n > 0)
        .map(|(k, n)| (k.clone(), *n))
        .collect();
    assert_eq!(
        by_worker, expected,
        "vanished attempts per worker vs claims held at the kill (seed {seed})"
    );
    let kills = cut.len();
    let landed = expected.len();
    assert!(
        kills >= 5,
        "only {kills} kills: the run was too short to soak"
    );
    assert!(vanished > 0, "no kill landed mid-attempt in {kills} kills");
    // Handler runs: one per operation, plus one per attempt cut after its effect.
    let calls = rig.scalar("SELECT CAST(sum(calls) AS BIGINT) FROM demo_effects");
    assert!(
        (OPS..=attempts).contains(&calls),
        "{calls} calls for {attempts} attempts"
    );
    rig.report(&format!(
        "faults injected {kills} SIGKILLs ({landed} of them mid-attempt), operations {OPS}, \
         succeeded {OPS}, lost {lost}, duplicate effects {duplicates}, vanished attempts \
         {vanished} (all accounted for), re-executions after the effect {}, run {:.1} s, seed {seed}",
        calls - OPS,
        run.as_secs_f64()
    ));
}
