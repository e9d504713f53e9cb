//! A kind's retry policy, a decision rather than a default: the builder only has a `build` once a
//! timeout, a bound and the I/O declaration (with its ladder) are given.

use std::marker::PhantomData;

use chrono::Duration;

use crate::{Error, FailureClass, Jitter, Ladder, Result};

/// The refunded backpressure snoozes one operation may take by default: at the default snooze
/// of five seconds, about ten minutes of local pressure before its attempts count.
pub const DEFAULT_SNOOZE_BUDGET: u32 = 120;

/// The automatic retries of unknown outcomes a kind whose remote side honours the effect key
/// gets by default: the seed's "small attempt budget" for ambiguous failures.
pub const DEFAULT_UNKNOWN_RETRIES: u32 = 2;

/// The lower of two optional bounds; no bound is no limit.
fn lower(a: Option<u32>, b: Option<u32>) -> Option<u32> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// Whether `attempt` (1-based, the one that just ran) used up the attempts `bound` allows: the
/// one rule for "attempts exhausted", whoever decides (a failure, a vanished attempt, a
/// resolution). `None` bounds nothing.
pub(crate) fn attempts_exhausted(attempt: u32, bound: Option<u32>) -> bool {
    bound.is_some_and(|max| attempt >= max)
}

/// Builder state: no execution timeout declared yet.
#[derive(Debug)]
pub struct NoTimeout;
/// Builder state: an execution timeout is declared.
#[derive(Debug)]
pub struct Timed;
/// Builder state: neither an attempt bound nor a give-up duration declared yet.
#[derive(Debug)]
pub struct NoBound;
/// Builder state: an attempt bound and/or a give-up duration is declared.
#[derive(Debug)]
pub struct Bounded;
/// Builder state: the kind has not said whether it does external I/O.
#[derive(Debug)]
pub struct UndeclaredIo;
/// Builder state: the kind said whether it does external I/O (and, if it does, gave a ladder).
#[derive(Debug)]
pub struct DeclaredIo;
/// Builder state: the jitter rule is not stated yet.
#[derive(Debug)]
pub struct UnstatedJitter;
/// Builder state: the jitter rule is stated (possibly [`Jitter::None`]).
#[derive(Debug)]
pub struct StatedJitter;

/// A kind's retry policy: a decision, not a default.
///
/// The builder makes the rule "a job must declare a positive timeout, a positive attempt limit or
/// retry expiry, and a backoff when it does external I/O" a compile-time rule, with the seed's
/// "a production policy should state the jitter rule": `build` exists only once all four are
/// declared (stating [`Jitter::None`] is allowed; leaving the jitter out is not).
///
/// ```
/// use chrono::Duration;
/// use oprec_core::{Jitter, Ladder, RetryPolicy};
///
/// let policy = RetryPolicy::builder()
///     .timeout(Duration::seconds(30))
///     .max_attempts(6)
///     .give_up_after(Duration::hours(48))
///     .external_io(Ladder::schedule_secs(&[0, 60, 300, 1500, 7500, 37500]))
///     .jitter(Jitter::Equal)
///     .build()
///     .unwrap();
/// assert_eq!(policy.max_attempts(), Some(6));
/// ```
///
/// Leaving any declaration out does not compile:
///
/// ```compile_fail
/// use chrono::Duration;
/// use oprec_core::RetryPolicy;
/// // No ladder for a kind that calls a provider: refused.
/// let policy = RetryPolicy::builder()
///     .timeout(Duration::seconds(30))
///     .max_attempts(3)
///     .jitter(oprec_core::Jitter::None)
///     .build();
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct RetryPolicy {
    timeout: Duration,
    max_attempts: Option<u32>,
    give_up_after: Option<Duration>,
    ladder: Ladder,
    external_io: bool,
    rate_limit_max: Duration,
    backpressure_snooze: Duration,
    snooze_budget: u32,
    unknown_retries: u32,
}

impl RetryPolicy {
    /// Starts a policy; see the type's documentation for what must be declared.
    pub fn builder() -> PolicyBuilder<NoTimeout, NoBound, UndeclaredIo, UnstatedJitter> {
        PolicyBuilder {
            timeout: None,
            max_attempts: None,
            give_up_after: None,
            ladder: None,
            external_io: false,
            rate_limit_max: Duration::hours(1),
            backpressure_snooze: Duration::seconds(5),
            snooze_budget: DEFAULT_SNOOZE_BUDGET,
            unknown_retries: 0,
            jitter: None,
            _state: PhantomData,
        }
    }

    /// How long one attempt may run before it is abandoned as timed out.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// The effective attempt bound: the declared bound, or the schedule's length, whichever is
    /// smaller; `None` when only a deadline bounds the kind.
    pub fn max_attempts(&self) -> Option<u32> {
        lower(self.max_attempts, self.ladder.max_attempts())
    }

    /// The attempt bound of an operation whose own bound (stored at enqueue, or asked for by the
    /// caller) is `stored`: the lower of the two, since the policy is the ceiling.
    pub fn attempt_bound(&self, stored: Option<u32>) -> Option<u32> {
        lower(stored, self.max_attempts())
    }

    /// How long after enqueue the kind gives up by default (a caller's deadline overrides it).
    pub fn give_up_after(&self) -> Option<Duration> {
        self.give_up_after
    }

    /// The wait before the first attempt: the ladder's first rung, unjittered (zero for an
    /// exponential ladder). Added to the enqueue time (and the caller's delay) at enqueue.
    pub fn first_delay(&self) -> Duration {
        self.ladder
            .delay_before(1, FailureClass::Transient)
            .unwrap_or_default()
    }

    /// The retry ladder.
    pub fn ladder(&self) -> &Ladder {
        &self.ladder
    }

    /// Whether the kind declared external I/O.
    pub fn external_io(&self) -> bool {
        self.external_io
    }

    /// The longest a rate-limited failure may defer, whatever the dependency declared.
    pub fn rate_limit_max(&self) -> Duration {
        self.rate_limit_max
    }

    /// How long a backpressure snooze waits.
    pub fn backpressure_snooze(&self) -> Duration {
        self.backpressure_snooze
    }

    /// How many backpressure snoozes (each refunding its attempt) one operation may take; past
    /// it, backpressure climbs the ordinary ladder and counts against the attempt bound.
    pub fn snooze_budget(&self) -> u32 {
        self.snooze_budget
    }

    /// How many unknown outcomes (an unrecognised error, a timeout of an external-I/O attempt)
    /// are retried automatically on the ladder before the next one reconciles: 0 (reconcile at
    /// once) unless the kind declared that its remote side honours the effect key.
    pub fn unknown_retries(&self) -> u32 {
        self.unknown_retries
    }
}

/// Builds a [`RetryPolicy`]; the type parameters track which declarations were made.
#[derive(Debug)]
#[must_use = "a policy builder does nothing until `build` is called"]
pub struct PolicyBuilder<T, B, I, J> {
    timeout: Option<Duration>,
    max_attempts: Option<u32>,
    give_up_after: Option<Duration>,
    ladder: Option<Ladder>,
    external_io: bool,
    rate_limit_max: Duration,
    backpressure_snooze: Duration,
    snooze_budget: u32,
    unknown_retries: u32,
    _state: PhantomData<(T, B, I, J)>,
    jitter: Option<Jitter>,
}

impl<T, B, I, J> PolicyBuilder<T, B, I, J> {
    fn into_state<T2, B2, I2, J2>(self) -> PolicyBuilder<T2, B2, I2, J2> {
        PolicyBuilder {
            timeout: self.timeout,
            max_attempts: self.max_attempts,
            give_up_after: self.give_up_after,
            ladder: self.ladder,
            external_io: self.external_io,
            rate_limit_max: self.rate_limit_max,
            backpressure_snooze: self.backpressure_snooze,
            snooze_budget: self.snooze_budget,
            unknown_retries: self.unknown_retries,
            jitter: self.jitter,
            _state: PhantomData,
        }
    }

    /// Declares the execution timeout of one attempt (must be positive).
    pub fn timeout(mut self, timeout: Duration) -> PolicyBuilder<Timed, B, I, J> {
        self.timeout = Some(timeout);
        self.into_state()
    }

    /// Bounds the number of attempts (must be positive).
    pub fn max_attempts(mut self, n: u32) -> PolicyBuilder<T, Bounded, I, J> {
        self.max_attempts = Some(n);
        self.into_state()
    }

    /// Gives up this long after enqueue unless the caller sets its own deadline (must be positive).
    pub fn give_up_after(mut self, d: Duration) -> PolicyBuilder<T, Bounded, I, J> {
        self.give_up_after = Some(d);
        self.into_state()
    }

    /// Declares that the kind calls something outside the process, with the ladder its retries climb.
    pub fn external_io(mut self, ladder: Ladder) -> PolicyBuilder<T, B, DeclaredIo, J> {
        self.ladder = Some(ladder);
        self.external_io = true;
        self.into_state()
    }

    /// Declares that the kind does no external I/O; retries are immediate unless a ladder is given
    /// with [`PolicyBuilder::ladder`].
    pub fn local_only(mut self) -> PolicyBuilder<T, B, DeclaredIo, J> {
        self.external_io = false;
        self.into_state()
    }

    /// States the jitter rule of the ladder's delays: how retries that failed together are
    /// spread, and so how far a retry may move (never past `give_up_at`: the policy clamps it).
    /// Required, like the timeout and the bound; [`Jitter::None`] is a statement too.
    pub fn jitter(mut self, jitter: Jitter) -> PolicyBuilder<T, B, I, StatedJitter> {
        self.jitter = Some(jitter);
        self.into_state()
    }

    /// Sets or replaces the ladder.
    pub fn ladder(mut self, ladder: Ladder) -> Self {
        self.ladder = Some(ladder);
        self
    }

    /// Caps how long a rate-limited failure may defer (default one hour).
    pub fn rate_limit_max(mut self, d: Duration) -> Self {
        self.rate_limit_max = d;
        self
    }

    /// How long a backpressure snooze waits (default five seconds).
    pub fn backpressure_snooze(mut self, d: Duration) -> Self {
        self.backpressure_snooze = d;
        self
    }

    /// Declares that the remote side honours the effect key (`ctx.effect_key()`, sent as its
    /// idempotency key): a retry of an effect that did happen is deduplicated there, so an
    /// unknown outcome (an unrecognised error, a timeout) is retried automatically up to
    /// [`DEFAULT_UNKNOWN_RETRIES`] times before it reconciles. Without this declaration an
    /// unknown outcome reconciles at once: no blind retry.
    pub fn remote_honours_effect_key(mut self) -> Self {
        self.unknown_retries = DEFAULT_UNKNOWN_RETRIES;
        self
    }

    /// Sets how many unknown outcomes are retried automatically before reconciling (see
    /// [`PolicyBuilder::remote_honours_effect_key`]; 0: reconcile at once).
    pub fn unknown_retries(mut self, n: u32) -> Self {
        self.unknown_retries = n;
        self
    }

    /// How many refunded backpressure snoozes one operation may take before backpressure
    /// climbs the ordinary ladder (default [`DEFAULT_SNOOZE_BUDGET`]; 0: never snooze).
    pub fn snooze_budget(mut self, n: u32) -> Self {
        self.snooze_budget = n;
        self
    }
}

impl PolicyBuilder<Timed, Bounded, DeclaredIo, StatedJitter> {
    /// The policy, once every declaration is there; values must be positive and the ladder sound.
    pub fn build(self) -> Result<RetryPolicy> {
        let invalid = |m: &str| Err(Error::InvalidInput(format!("retry policy: {m}")));
        let timeout = self.timeout.unwrap_or_default();
        if timeout <= Duration::zero() {
            return invalid("the execution timeout must be positive");
        }
        if self.max_attempts == Some(0) {
            return invalid("the attempt bound must be positive");
        }
        if self.give_up_after.is_some_and(|d| d <= Duration::zero()) {
            return invalid("the give-up duration must be positive");
        }
        if self.rate_limit_max < Duration::zero() || self.backpressure_snooze < Duration::zero() {
            return invalid("rate-limit maximum and backpressure snooze must not be negative");
        }
        let stated = self.jitter.unwrap_or_default();
        let ladder = self.ladder.unwrap_or_else(Ladder::immediate);
        if ladder.jitter() != Jitter::None && ladder.jitter() != stated {
            return invalid(&format!(
                "the jitter is stated twice, differently: {:?} on the ladder, {stated:?} on the \
                 policy",
                ladder.jitter()
            ));
        }
        let ladder = ladder.with_jitter(stated);
        if let Err(m) = ladder.validate() {
            return invalid(&m);
        }
        if self.external_io
            && let Some(why) = ladder.immediate_retry()
        {
            return invalid(&format!(
                "a kind that does external I/O needs a positive delay before every retry: {why}"
            ));
        }
        Ok(RetryPolicy {
            timeout,
            max_attempts: self.max_attempts,
            give_up_after: self.give_up_after,
            ladder,
            external_io: self.external_io,
            rate_limit_max: self.rate_limit_max,
            backpressure_snooze: self.backpressure_snooze,
            snooze_budget: self.snooze_budget,
            unknown_retries: self.unknown_retries,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_must_be_positive() {
        let base = || RetryPolicy::builder().local_only().jitter(Jitter::None);
        assert!(
            base()
                .timeout(Duration::zero())
                .max_attempts(3)
                .jitter(crate::Jitter::None)
                .build()
                .is_err()
        );
        assert!(
            base()
                .timeout(Duration::seconds(1))
                .max_attempts(0)
                .build()
                .is_err()
        );
        assert!(
            base()
                .timeout(Duration::seconds(1))
                .give_up_after(Duration::seconds(-1))
                .build()
                .is_err()
        );
        assert!(
            RetryPolicy::builder()
                .timeout(Duration::seconds(1))
                .max_attempts(3)
                .external_io(Ladder::schedule_secs(&[]))
                .jitter(crate::Jitter::None)
                .build()
                .is_err()
        );
        assert!(
            RetryPolicy::builder()
                .timeout(Duration::seconds(1))
                .max_attempts(3)
                .external_io(Ladder::immediate())
                .jitter(crate::Jitter::None)
                .build()
                .is_err()
        );
        assert!(
            base()
                .timeout(Duration::seconds(1))
                .max_attempts(3)
                .build()
                .is_ok()
        );
    }

    #[test]
    fn an_external_io_ladder_that_can_retry_at_once_is_refused() {
        use crate::{Exponential, FailureClass};
        let build = |ladder: Ladder| {
            RetryPolicy::builder()
                .timeout(Duration::seconds(1))
                .max_attempts(3)
                .external_io(ladder)
                .jitter(crate::Jitter::None)
                .build()
        };
        let refused = |ladder: Ladder, says: &str| {
            let e = build(ladder).expect_err("refused").to_string();
            assert!(e.contains(says), "{e}");
        };
        refused(Ladder::schedule_secs(&[0, 0, 0]), "before attempt 2");
        refused(Ladder::schedule_secs(&[0, 60, 0]), "before attempt 3");
        refused(Ladder::schedule_secs(&[5, 0]), "before attempt 2");
        refused(Ladder::immediate(), "zero base");
        refused(
            Ladder::exponential(Exponential::new(
                Duration::zero(),
                2.0,
                Duration::seconds(60),
            )),
            "zero base",
        );
        refused(
            Ladder::exponential(
                Exponential::new(Duration::seconds(1), 2.0, Duration::seconds(60))
                    .base_for(FailureClass::RateLimited, Duration::zero()),
            ),
            "zero base for rate_limited",
        );
        // A first rung of zero is the first attempt, not a retry.
        assert!(build(Ladder::schedule_secs(&[0, 1, 60])).is_ok());
        assert!(build(Ladder::schedule_secs(&[0])).is_ok());
        assert!(
            build(Ladder::exponential(Exponential::new(
                Duration::milliseconds(100),
                2.0,
                Duration::seconds(60)
            )))
            .is_ok()
        );
        // A local-only kind may retry at once (bounded by its attempts).
        assert!(
            RetryPolicy::builder()
                .timeout(Duration::seconds(1))
                .max_attempts(3)
                .local_only()
                .ladder(Ladder::schedule_secs(&[0, 0, 0]))
                .jitter(crate::Jitter::None)
                .build()
                .is_ok()
        );
    }

    #[test]
    fn effective_bound_is_the_smaller_of_bound_and_schedule() {
        let p = RetryPolicy::builder()
            .timeout(Duration::seconds(1))
            .max_attempts(10)
            .external_io(Ladder::schedule_secs(&[0, 1, 2]))
            .jitter(crate::Jitter::None)
            .build()
            .unwrap();
        assert_eq!(p.max_attempts(), Some(3));
        let p = RetryPolicy::builder()
            .timeout(Duration::seconds(1))
            .give_up_after(Duration::hours(1))
            .local_only()
            .jitter(crate::Jitter::None)
            .build()
            .unwrap();
        assert_eq!(p.max_attempts(), None);
    }
}
