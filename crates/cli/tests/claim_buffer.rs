//! The claim buffer, with the real `oprec` binary as a separate worker process, on PostgreSQL +
//! Redis Streams and on SQLite poll-only:
//!
//! - SIGTERM gives back the claims waiting in the buffer at once (before the drain of the running
//!   attempts ends), pending again with their attempts refunded and no attempt row; the running
//!   ones are released at the drain timeout as before;
//! - a slow kind (handlers of 200 ms, 32 handlers) keeps about a second of work claimed ahead,
//!   never more than two: the claimed operations stay under 32 running + 2 s × 160/s.
//!
//! Services and clean-up as in `process_faults.rs` (see `rig`).

#![cfg(unix)]

mod common;
mod rig;

use std::time::{Duration, Instant};

use rig::{Rig, RigKind, poll};

/// Four handlers, twelve operations of 30 s: the worker claims eight (four running, four in its
/// buffer, one concurrency ahead before it knows a rate) and, seeing no completion, no more.
/// SIGTERM: the four buffered are given back at once, while the four running still drain (10 s);
/// then those are released. Every operation ends pending; only the released ones have an attempt
/// counted and an attempt row.
fn sigterm_gives_back_buffered_claims(kind: RigKind) {
    let rig = Rig::new(kind, "sigterm_gives_back_buffered_claims");
    rig.oprec_ok(&[
        "enqueue",
        "--kind",
        "demo.slow",
        "--payload",
        r#"{"ms": 30000}"#,
        "--count",
        "12",
    ]);
    let mut w = rig.worker(
        "cb-term",
        &[
            "--concurrency",
            "4",
            "--drain-timeout",
            "10s",
            "--lease",
            "60s",
        ],
    );
    let claimed = poll(Duration::from_secs(30), Duration::from_millis(20), || {
        (rig.running() == 8).then_some(())
    });
    assert!(claimed.is_some(), "the worker never held 8 claims");
    // No completion comes, so the buffer's target falls and nothing more is claimed.
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(rig.running(), 8, "claimed past one concurrency ahead");

    let signalled = Instant::now();
    w.sigterm();
    let given_back = poll(Duration::from_secs(8), Duration::from_millis(20), || {
        (rig.running() == 4).then_some(())
    });
    assert!(
        given_back.is_some(),
        "the buffered claims were not given back"
    );
    let given_back_after = signalled.elapsed();
    assert!(
        w.wait_for_exit(Duration::ZERO).is_none(),
        "given back only when the worker exited, not at once"
    );
    let Some(status) = w.wait_for_exit(Duration::from_secs(30)) else {
        panic!("the worker did not exit after SIGTERM");
    };
    assert!(status.success(), "{status}");
    assert!(
        w.stdout().contains("released 4") && w.stdout().contains("given back 4"),
        "{}",
        w.stdout()
    );
    assert_eq!(
        rig.statuses(),
        vec![("pending".to_owned(), 12)],
        "{}",
        rig.dump()
    );
    // No attempt counted: the given-back ones left no row, the four released ones a row each,
    // "released", their attempts refunded (a deploy is not a failure of the operation).
    assert_eq!(
        rig.scalar("SELECT CAST(sum(attempt) AS BIGINT) FROM operations"),
        0
    );
    assert_eq!(
        rig.counts("SELECT outcome, count(*) FROM operation_attempts GROUP BY outcome"),
        vec![("released".to_owned(), 4)]
    );
    assert_eq!(
        rig.scalar(
            "SELECT count(*) FROM operations WHERE attempt = 0 \
             AND claim_token IS NULL AND lease_until IS NULL"
        ),
        12
    );
    rig.report(&format!(
        "1 SIGTERM, 4 running and 4 buffered: 4 given back {:.1} s after the signal (attempts \
         refunded, no attempt row), 4 released at the drain timeout, exit 0",
        given_back_after.as_secs_f64()
    ));
}

/// 32 handlers of 200 ms complete about 160 operations a second; the buffer's target is a
/// second of that. Sampled while the worker drains 1,200 of them, the operations held (running
/// or buffered) stay at most 32 + 2 × 160, and exceed the 32 handlers (work is claimed ahead).
fn slow_kind_keeps_little_claimed_ahead(kind: RigKind) {
    const OPS: i64 = 1200;
    let rig = Rig::new(kind, "slow_kind_keeps_little_claimed_ahead");
    rig.oprec_ok(&[
        "enqueue",
        "--kind",
        "demo.slow",
        "--payload",
        r#"{"ms": 200}"#,
        "--count",
        &OPS.to_string(),
    ]);
    let mut w = rig.worker(
        "cb-slow",
        &["--concurrency", "32", "--exit-when-idle", "--lease", "30s"],
    );
    let mut most_held = 0;
    let mut samples = 0;
    let deadline = Instant::now() + Duration::from_secs(120);
    while w.wait_for_exit(Duration::ZERO).is_none() {
        assert!(Instant::now() < deadline, "the worker did not finish");
        let held = rig.running();
        most_held = most_held.max(held);
        samples += 1;
        std::thread::sleep(Duration::from_millis(50));
    }
    let Some(status) = w.wait_for_exit(Duration::from_secs(5)) else {
        panic!("the worker did not exit");
    };
    assert!(status.success(), "{status}");
    assert!(
        w.stdout().contains(&format!("succeeded {OPS}")),
        "{}",
        w.stdout()
    );
    assert!(samples > 20, "too few samples: {samples}");
    assert!(
        most_held > 32,
        "nothing claimed ahead of the handlers: {most_held}"
    );
    assert!(
        most_held <= 32 + 2 * 160,
        "more than two seconds of work claimed ahead: {most_held} held"
    );
    rig.report(&format!(
        "{OPS} operations of 200 ms, 32 handlers: at most {most_held} held at once \
         (32 running + {} buffered) over {samples} samples",
        most_held - 32
    ));
}

macro_rules! on_rigs {
    ($($scenario:ident),+ $(,)?) => {
        $(
            mod $scenario {
                use super::*;

                #[test]
                fn postgres_redis() {
                    super::$scenario(RigKind::PostgresRedis);
                }

                #[test]
                fn sqlite_poll() {
                    super::$scenario(RigKind::SqlitePoll);
                }
            }
        )+
    };
}

on_rigs!(
    sigterm_gives_back_buffered_claims,
    slow_kind_keeps_little_claimed_ahead
);
