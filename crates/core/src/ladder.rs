//! Retry ladders: an explicit schedule or an exponential curve per failure class, with a stated
//! jitter rule. A ladder says how long before the next attempt; the policy says whether there is
//! one.

use chrono::Duration;
use rand::Rng;

use crate::FailureClass;

/// How the ladder spreads wake-ups so that jobs that failed together do not all return together.
///
/// The rule is stated, not hidden: for a computed delay `d`, the drawn delay is uniform over
/// `[0, d]` (full), `[d/2, d]` (equal) or `[d·(1−p), d·(1+p)]` (proportional, `0 < p ≤ 1`). The
/// retry policy then clamps the result so jitter never moves an attempt past `give_up_at` when the
/// unjittered rung was before it.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub enum Jitter {
    /// No jitter: deterministic delays (fixtures, tests).
    #[default]
    None,
    /// Uniform over `[0, d]`: the widest spread (AWS's "full jitter").
    Full,
    /// Uniform over `[d/2, d]`: never sooner than half the rung.
    Equal,
    /// Uniform over `[d·(1−p), d·(1+p)]`.
    Proportional(f64),
}

impl Jitter {
    /// Draws a delay for the computed rung `d`.
    pub fn apply(&self, d: Duration, rng: &mut impl Rng) -> Duration {
        let ms = d.num_milliseconds().max(0);
        if ms == 0 {
            return Duration::zero();
        }
        let (lo, hi) = match *self {
            Jitter::None => return d,
            Jitter::Full => (0, ms),
            Jitter::Equal => (ms / 2, ms),
            Jitter::Proportional(p) => {
                let p = p.clamp(0.0, 1.0);
                let spread = (ms as f64 * p) as i64;
                (ms - spread, ms + spread)
            }
        };
        Duration::milliseconds(rng.random_range(lo..=hi))
    }

    pub(crate) fn is_valid(&self) -> bool {
        match *self {
            Jitter::Proportional(p) => p.is_finite() && p > 0.0 && p <= 1.0,
            _ => true,
        }
    }
}

/// Exponential rungs: `base × factor^(n−2)` before attempt `n ≥ 2`, capped at `ceiling`, with the
/// base chosen per failure class (a restarting dependency recovers in seconds, a provider outage
/// in hours).
#[derive(Clone, Debug, PartialEq)]
pub struct Exponential {
    /// The first retry's delay for classes without their own base.
    pub base: Duration,
    /// Per-class bases that override `base`.
    pub base_for: Vec<(FailureClass, Duration)>,
    /// Growth per rung (> 1).
    pub factor: f64,
    /// No rung waits longer than this.
    pub ceiling: Duration,
}

impl Exponential {
    /// Exponential rungs from `base`, growing by `factor`, capped at `ceiling`.
    pub fn new(base: Duration, factor: f64, ceiling: Duration) -> Self {
        Exponential {
            base,
            base_for: Vec::new(),
            factor,
            ceiling,
        }
    }

    /// Uses `base` as the first retry's delay for failures of `class`.
    pub fn base_for(mut self, class: FailureClass, base: Duration) -> Self {
        self.base_for.retain(|(c, _)| *c != class);
        self.base_for.push((class, base));
        self
    }
}

#[derive(Clone, Debug, PartialEq)]
enum Rungs {
    Schedule(Vec<Duration>),
    Exponential(Exponential),
}

/// The stored retry ladder: the delay before each attempt. Delays become `next_eligible_at`; no
/// worker ever sleeps them.
#[derive(Clone, Debug, PartialEq)]
pub struct Ladder {
    rungs: Rungs,
    jitter: Jitter,
}

impl Ladder {
    /// An explicit schedule: the n-th delay is the wait before attempt n (so the first is usually
    /// 0). After the last rung the operation is terminal.
    ///
    /// ```
    /// use oprec_core::Ladder;
    /// // The six-rung teaching ladder: 0, 60, 300, 1,500, 7,500, 37,500 seconds, then terminal.
    /// let ladder = Ladder::schedule_secs(&[0, 60, 300, 1500, 7500, 37500]);
    /// assert_eq!(ladder.max_attempts(), Some(6));
    /// ```
    pub fn schedule(delays: impl IntoIterator<Item = Duration>) -> Self {
        Ladder {
            rungs: Rungs::Schedule(delays.into_iter().collect()),
            jitter: Jitter::None,
        }
    }

    /// [`Ladder::schedule`] in whole seconds.
    pub fn schedule_secs(secs: &[i64]) -> Self {
        Self::schedule(secs.iter().map(|s| Duration::seconds(*s)))
    }

    /// Exponential rungs with no end of their own: the policy's attempt bound or deadline ends them.
    pub fn exponential(e: Exponential) -> Self {
        Ladder {
            rungs: Rungs::Exponential(e),
            jitter: Jitter::None,
        }
    }

    /// Every retry at once (for local-only kinds that declare no ladder).
    pub fn immediate() -> Self {
        Self::exponential(Exponential::new(Duration::zero(), 1.0, Duration::zero()))
    }

    /// Sets the jitter rule.
    pub fn with_jitter(mut self, jitter: Jitter) -> Self {
        self.jitter = jitter;
        self
    }

    /// The jitter rule.
    pub fn jitter(&self) -> Jitter {
        self.jitter
    }

    /// The unjittered wait before attempt `attempt` (1-based) after a failure of `class`, or
    /// `None` when the ladder has no such rung (terminal).
    pub fn delay_before(&self, attempt: u32, class: FailureClass) -> Option<Duration> {
        if attempt == 0 {
            return None;
        }
        match &self.rungs {
            Rungs::Schedule(delays) => delays.get(attempt as usize - 1).copied(),
            Rungs::Exponential(e) => {
                if attempt == 1 {
                    return Some(Duration::zero());
                }
                let base = e
                    .base_for
                    .iter()
                    .find(|(c, _)| *c == class)
                    .map(|(_, b)| *b)
                    .unwrap_or(e.base);
                let ceiling_ms = e.ceiling.num_milliseconds() as f64;
                let ms = base.num_milliseconds() as f64 * e.factor.powi(attempt as i32 - 2);
                Some(Duration::milliseconds(ms.min(ceiling_ms).max(0.0) as i64))
            }
        }
    }

    /// How many attempts the ladder itself allows (`None` for exponential ladders).
    pub fn max_attempts(&self) -> Option<u32> {
        match &self.rungs {
            Rungs::Schedule(d) => Some(d.len() as u32),
            Rungs::Exponential(_) => None,
        }
    }

    /// Why this ladder can retry at once, over and over, if it can: a schedule with a zero delay
    /// before any retry (`[0, 0, 0]`, `[0, 60, 0]`), or an exponential ladder whose base (for
    /// any class) is zero, since every rung of it is then zero. The first rung, the wait before
    /// the first attempt, may be zero.
    pub fn immediate_retry(&self) -> Option<String> {
        match &self.rungs {
            Rungs::Schedule(d) => d
                .iter()
                .enumerate()
                .skip(1)
                .find(|(_, x)| **x <= Duration::zero())
                .map(|(i, _)| {
                    format!(
                        "the schedule retries at once before attempt {} (a zero delay after the \
                         first rung)",
                        i + 1
                    )
                }),
            Rungs::Exponential(e) => {
                if e.base <= Duration::zero() {
                    Some("an exponential ladder with a zero base retries at once every time".into())
                } else {
                    e.base_for
                        .iter()
                        .find(|(_, b)| *b <= Duration::zero())
                        .map(|(c, _)| {
                            format!(
                                "an exponential ladder with a zero base for {c} retries those \
                                 failures at once every time"
                            )
                        })
                }
            }
        }
    }

    pub(crate) fn validate(&self) -> Result<(), String> {
        if !self.jitter.is_valid() {
            return Err("proportional jitter must be in (0, 1]".into());
        }
        match &self.rungs {
            Rungs::Schedule(d) if d.is_empty() => Err("a schedule needs at least one rung".into()),
            Rungs::Schedule(d) if d.iter().any(|x| *x < Duration::zero()) => {
                Err("a schedule's delays must not be negative".into())
            }
            Rungs::Exponential(e)
                if !(e.factor.is_finite() && e.factor >= 1.0)
                    || e.base < Duration::zero()
                    || e.ceiling < e.base
                    || e.base_for.iter().any(|(_, b)| *b < Duration::zero()) =>
            {
                Err("an exponential ladder needs base ≥ 0, factor ≥ 1 and ceiling ≥ base".into())
            }
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    #[test]
    fn schedule_rungs_are_the_delays_before_each_attempt() {
        let l = Ladder::schedule_secs(&[0, 60, 300]);
        let t = FailureClass::Transient;
        assert_eq!(l.delay_before(1, t), Some(Duration::zero()));
        assert_eq!(l.delay_before(2, t), Some(Duration::seconds(60)));
        assert_eq!(l.delay_before(3, t), Some(Duration::seconds(300)));
        assert_eq!(l.delay_before(4, t), None);
    }

    #[test]
    fn exponential_uses_the_class_base_and_the_ceiling() {
        let l = Ladder::exponential(
            Exponential::new(Duration::seconds(60), 2.0, Duration::seconds(3600))
                .base_for(FailureClass::RateLimited, Duration::seconds(5)),
        );
        let t = FailureClass::Transient;
        assert_eq!(l.delay_before(2, t), Some(Duration::seconds(60)));
        assert_eq!(l.delay_before(3, t), Some(Duration::seconds(120)));
        assert_eq!(l.delay_before(5, t), Some(Duration::seconds(480)));
        assert_eq!(l.delay_before(30, t), Some(Duration::seconds(3600)));
        assert_eq!(
            l.delay_before(3, FailureClass::RateLimited),
            Some(Duration::seconds(10))
        );
    }

    #[test]
    fn jitter_stays_in_its_stated_range() {
        let mut rng = StdRng::seed_from_u64(7);
        let d = Duration::seconds(100);
        for _ in 0..1000 {
            let full = Jitter::Full.apply(d, &mut rng);
            assert!(full >= Duration::zero() && full <= d);
            let equal = Jitter::Equal.apply(d, &mut rng);
            assert!(equal >= Duration::seconds(50) && equal <= d);
            let p = Jitter::Proportional(0.2).apply(d, &mut rng);
            assert!(p >= Duration::seconds(80) && p <= Duration::seconds(120));
        }
        assert_eq!(Jitter::None.apply(d, &mut rng), d);
    }

    #[test]
    fn jitter_spreads_a_mass_of_equal_delays() {
        let mut rng = StdRng::seed_from_u64(1);
        let d = Duration::seconds(60);
        let mut seen = std::collections::HashSet::new();
        for _ in 0..1000 {
            seen.insert(Jitter::Full.apply(d, &mut rng).num_seconds());
        }
        // 1,000 jobs that failed together land on (nearly) every second of the minute.
        assert!(seen.len() > 55, "only {} distinct seconds", seen.len());
    }
}
