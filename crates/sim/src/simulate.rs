//! The simulation: each operation's attempts, one after another, on a virtual clock.

use chrono::{DateTime, Duration, TimeZone, Utc};
use oprec_core::{ClaimContext, FailureClass, RetryDecision};
use rand::SeedableRng;
use rand::rngs::StdRng;
use serde::Serialize;

use crate::PolicySpec;

/// The situation: how many operations, enqueued when the dependency goes down, and for how long
/// it stays down.
#[derive(Clone, Debug, PartialEq)]
pub struct Outage {
    /// Operations enqueued at the start of the outage.
    pub ops: u32,
    /// How long the dependency is down.
    pub outage: Duration,
    /// Enqueue times are spread evenly over this window from the start (zero: all at once).
    pub enqueue_over: Duration,
    /// How long after the end of the outage the simulation keeps counting.
    pub after: Duration,
    /// The seed for jitter draws (same seed, same figures).
    pub seed: u64,
}

/// What one policy did.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SimReport {
    /// The policy's spec.
    pub policy: String,
    /// Every scheduled attempt, outage and after.
    pub attempts: u64,
    /// Attempts in each 24-hour day from the start of the outage.
    pub attempts_per_day: Vec<u64>,
    /// Attempts made while the dependency was down (each one a request to a failing service).
    pub attempts_during_outage: u64,
    /// The busiest second in the first minute after recovery.
    pub peak_per_second_first_minute: u64,
    /// The busiest second at any time after recovery: the retry storm, wherever the synchronized
    /// rungs land.
    pub peak_per_second_after_recovery: u64,
    /// Operations that ended dead (attempts exhausted or deadline passed).
    pub dead: u64,
    /// Operations that succeeded.
    pub succeeded: u64,
    /// Operations still waiting when the simulation stopped.
    pub unresolved: u64,
    /// From the start of the outage until the last operation came to rest (if all did).
    pub backlog_gone_after_seconds: Option<i64>,
    /// Attempts per minute from the start of the outage, for the chart.
    pub per_minute: Vec<u64>,
}

/// Runs `ops` operations under `spec` through the outage.
pub fn simulate(outage: &Outage, spec: &PolicySpec) -> SimReport {
    let start: DateTime<Utc> = Utc.with_ymd_and_hms(2026, 1, 5, 0, 0, 0).unwrap();
    let recovery = start + outage.outage;
    let end = recovery + outage.after;
    let minutes = ((end - start).num_seconds() / 60 + 1) as usize;
    let mut r = SimReport {
        policy: spec.name.clone(),
        attempts: 0,
        attempts_per_day: vec![0; (end - start).num_days() as usize + 1],
        attempts_during_outage: 0,
        peak_per_second_first_minute: 0,
        peak_per_second_after_recovery: 0,
        dead: 0,
        succeeded: 0,
        unresolved: 0,
        backlog_gone_after_seconds: None,
        per_minute: vec![0; minutes],
    };
    let mut after_recovery = vec![0u64; outage.after.num_seconds().max(0) as usize + 1];
    let mut rng = StdRng::seed_from_u64(outage.seed);
    let mut last_rest = start;
    let policy = &spec.policy;
    let give_up = policy.give_up_after();
    for i in 0..outage.ops {
        let enqueued = start
            + Duration::milliseconds(
                outage.enqueue_over.num_milliseconds() * i64::from(i)
                    / i64::from(outage.ops.max(1)),
            );
        let first = policy
            .ladder()
            .delay_before(1, FailureClass::Transient)
            .unwrap_or_default();
        let mut ctx = ClaimContext {
            attempt: 0,
            max_attempts: policy.max_attempts(),
            give_up_at: give_up.map(|g| enqueued + g),
            snoozes: 0,
            unknowns: 0,
        };
        let mut t = enqueued + first;
        loop {
            if t > end {
                r.unresolved += 1;
                break;
            }
            ctx.attempt += 1;
            let offset = (t - start).num_seconds();
            r.attempts += 1;
            r.attempts_per_day[(offset / 86_400) as usize] += 1;
            r.per_minute[(offset / 60) as usize] += 1;
            let since_recovery = (t - recovery).num_seconds();
            if since_recovery >= 0 {
                after_recovery[since_recovery as usize] += 1;
            }
            if t >= recovery {
                r.succeeded += 1;
                last_rest = last_rest.max(t);
                break;
            }
            r.attempts_during_outage += 1;
            match policy.retry_at(&ctx, FailureClass::Transient, None, t, &mut rng) {
                RetryDecision::At(next) => t = next,
                RetryDecision::Exhausted | RetryDecision::DeadlinePassed { .. } => {
                    r.dead += 1;
                    last_rest = last_rest.max(t);
                    break;
                }
            }
        }
    }
    r.peak_per_second_first_minute = after_recovery.iter().take(60).copied().max().unwrap_or(0);
    r.peak_per_second_after_recovery = after_recovery.iter().copied().max().unwrap_or(0);
    if r.unresolved == 0 {
        r.backlog_gone_after_seconds = Some((last_rest - start).num_seconds());
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outage(ops: u32) -> Outage {
        Outage {
            ops,
            outage: Duration::hours(48),
            enqueue_over: Duration::zero(),
            after: Duration::hours(24),
            seed: 7,
        }
    }

    #[test]
    fn the_fixed_loop_schedules_1440_attempts_per_job_per_day() {
        let r = simulate(&outage(50), &"fixed:60s".parse().unwrap());
        // 50,000 jobs would be 72,000,000 a day: 1,440 per job.
        assert_eq!(r.attempts_per_day[0], 50 * 1440);
        assert_eq!(r.attempts_per_day[1], 50 * 1440);
        assert_eq!(r.attempts_during_outage, 50 * 2880);
        assert_eq!(r.succeeded, 50);
        assert_eq!(r.dead, 0);
        // No jitter: every job hits the recovered dependency in the same second.
        assert_eq!(r.peak_per_second_first_minute, 50);
        assert_eq!(r.peak_per_second_after_recovery, 50);
        assert_eq!(r.backlog_gone_after_seconds, Some(48 * 3600));
    }

    #[test]
    fn a_six_rung_ladder_makes_six_attempts_then_stops() {
        let r = simulate(
            &outage(100),
            &"ladder:0,60,300,1500,7500,37500".parse().unwrap(),
        );
        assert_eq!(r.attempts, 600);
        assert_eq!(r.dead, 100);
        assert_eq!(r.succeeded, 0);
        assert_eq!(
            r.peak_per_second_after_recovery, 0,
            "nothing is left to storm the recovery"
        );
        assert_eq!(r.backlog_gone_after_seconds, Some(46_860));
    }

    #[test]
    fn jitter_spreads_the_retry_storm() {
        let plain = simulate(&outage(1000), &"exp:60s,2,1h,max=1000".parse().unwrap());
        let jittered = simulate(
            &outage(1000),
            &"exp:60s,2,1h,max=1000,jitter=full".parse().unwrap(),
        );
        assert_eq!(plain.succeeded, 1000);
        assert_eq!(jittered.succeeded, 1000);
        assert!(
            plain.peak_per_second_after_recovery >= 1000 / 2,
            "{plain:?}"
        );
        assert!(
            jittered.peak_per_second_after_recovery * 10 < plain.peak_per_second_after_recovery,
            "jitter {} vs none {}",
            jittered.peak_per_second_after_recovery,
            plain.peak_per_second_after_recovery
        );
    }

    #[test]
    fn a_deadline_ends_work_the_attempt_bound_would_not() {
        let r = simulate(
            &outage(10),
            &"exp:60s,2,1h,max=1000,giveup=12h".parse().unwrap(),
        );
        assert_eq!(r.dead, 10);
        assert!(r.backlog_gone_after_seconds.unwrap() <= 12 * 3600);
    }

    #[test]
    fn the_same_seed_gives_the_same_figures() {
        let spec: PolicySpec = "exp:60s,2,1h,jitter=full".parse().unwrap();
        assert_eq!(simulate(&outage(200), &spec), simulate(&outage(200), &spec));
    }
}
