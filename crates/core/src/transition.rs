//! The end of a claim, decided: [`Transition`] (built only by its constructors, each a legal edge
//! out of `running`), the policy's decision for an attempt's outcome, and the rescuer's decision
//! for an attempt that vanished.

use chrono::{DateTime, Utc};
use rand::Rng;

use crate::policy::attempts_exhausted;
use crate::{
    AttemptOutcome, Claimed, Failure, FailureClass, Operation, OperationError, Outcome,
    RetryPolicy, Status, TerminalReason,
};

/// What the decision needs to know about the claim that just ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClaimContext {
    /// The attempt that just ran (1-based; counted at claim).
    pub attempt: u32,
    /// The bound stored on the operation at enqueue.
    pub max_attempts: Option<u32>,
    /// The caller's deadline.
    pub give_up_at: Option<DateTime<Utc>>,
    /// Backpressure snoozes the operation has taken (each refunded its attempt).
    pub snoozes: u32,
    /// Unknown outcomes the operation has had retried automatically.
    pub unknowns: u32,
}

impl ClaimContext {
    /// The attempt bound in force: the lower of the one stored at enqueue and the policy's.
    pub fn bound(&self, policy: &RetryPolicy) -> Option<u32> {
        policy.attempt_bound(self.max_attempts)
    }
}

impl From<&Claimed> for ClaimContext {
    fn from(claim: &Claimed) -> Self {
        ClaimContext::from(claim.operation())
    }
}

impl From<&Operation> for ClaimContext {
    fn from(op: &Operation) -> Self {
        ClaimContext {
            attempt: op.attempt,
            max_attempts: op.max_attempts,
            give_up_at: op.give_up_at,
            snoozes: op.snoozes,
            unknowns: op.unknowns,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Target {
    Succeed {
        remote_id: Option<String>,
    },
    Retry {
        at: DateTime<Utc>,
        failure: (FailureClass, OperationError),
    },
    Snooze {
        until: DateTime<Utc>,
        failure: (FailureClass, OperationError),
    },
    Dead {
        reason: TerminalReason,
        failure: Option<(FailureClass, OperationError)>,
    },
    Hold {
        failure: (FailureClass, OperationError),
    },
    Reconcile {
        failure: (FailureClass, OperationError),
    },
    Release {
        at: DateTime<Utc>,
    },
    CancelObsolete,
    Vanished {
        /// Back to pending at this time, or dead for this reason.
        next: Result<DateTime<Utc>, TerminalReason>,
        error: OperationError,
        /// The attempt ran isolated (alone in its worker): it counts toward the crash loop.
        isolated: bool,
    },
}

/// How a store must check that a transition still applies before writing it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fence {
    /// The operation is running under the claim token given with the transition.
    Claim,
    /// As [`Fence::Claim`], and the claim's lease has expired by the store's clock: a heartbeat
    /// that extended it since the rescuer looked wins.
    ExpiredClaim,
}

/// The rescuer's rule for attempts that vanished (the lease expired with no outcome).
///
/// Suspect isolation: an attempt that vanished beside other work does not say which operation
/// killed the worker, so it only makes the operation a suspect, retried alone. Only vanished
/// attempts that ran isolated count toward the crash loop, so the innocent neighbours of an
/// operation that kills its worker succeed on their isolated attempt and only the culprit ends
/// dead (`crash_loop`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VanishRule {
    /// Isolated vanished attempts in a row after which the operation is dead (`crash_loop`).
    pub vanish_limit: u32,
    /// How long a rescued operation waits before it is eligible again.
    pub retry_delay: chrono::Duration,
}

impl Default for VanishRule {
    fn default() -> Self {
        VanishRule {
            vanish_limit: 3,
            retry_delay: chrono::Duration::zero(),
        }
    }
}

/// What every vanished attempt's error says happened.
pub const VANISHED_SUMMARY: &str = "the lease expired with no outcome: the attempt vanished \
     (worker crashed, was killed, or ran past its lease)";

/// The end of a claim: where a running operation goes next and what its attempt row says.
///
/// Only the constructors below exist, each one a legal edge out of `running`, so a store cannot
/// be handed a combination it could misread (River's "use one of the constructors").
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Transition {
    target: Target,
}

fn failure_parts(f: Failure) -> (FailureClass, OperationError) {
    (f.class, f.error)
}

impl Transition {
    /// The effect happened.
    pub fn succeeded(remote_id: Option<String>) -> Self {
        Transition {
            target: Target::Succeed { remote_id },
        }
    }

    /// Back to pending, not claimable before `at` (the next rung of the ladder).
    pub fn retry(at: DateTime<Utc>, failure: Failure) -> Self {
        Transition {
            target: Target::Retry {
                at,
                failure: failure_parts(failure),
            },
        }
    }

    /// Back to pending until `until`, with the attempt refunded (backpressure).
    pub fn snooze(until: DateTime<Utc>, failure: Failure) -> Self {
        Transition {
            target: Target::Snooze {
                until,
                failure: failure_parts(failure),
            },
        }
    }

    /// Terminal: dead for `reason`, keeping the failure that ended it.
    pub fn dead(reason: TerminalReason, failure: Option<Failure>) -> Self {
        Transition {
            target: Target::Dead {
                reason,
                failure: failure.map(failure_parts),
            },
        }
    }

    /// Held for a human (configuration failure).
    pub fn hold(failure: Failure) -> Self {
        Transition {
            target: Target::Hold {
                failure: failure_parts(failure),
            },
        }
    }

    /// The outcome is unknown: reconcile before anything else.
    pub fn reconcile(failure: Failure) -> Self {
        Transition {
            target: Target::Reconcile {
                failure: failure_parts(failure),
            },
        }
    }

    /// Released unfinished (drain on shutdown): pending again from `at`, with the attempt
    /// refunded: a deploy that interrupts an attempt is not a failure of the operation.
    pub fn release(at: DateTime<Utc>) -> Self {
        Transition {
            target: Target::Release { at },
        }
    }

    /// The kind's still-needed check said no: cancelled as obsolete, handler never called.
    pub fn cancel_obsolete() -> Self {
        Transition {
            target: Target::CancelObsolete,
        }
    }

    /// The lease of `claim` expired with no outcome: the attempt vanished (the worker crashed,
    /// was killed, or ran past its lease). The operation becomes a suspect, whose next attempt
    /// runs isolated. An isolated attempt that vanished counts toward the crash loop: after
    /// `rule.vanish_limit` of them in a row the operation is dead (`crash_loop`), blamed on its own
    /// attempts; one that ran beside other work counts for nothing, since any operation in the
    /// worker may have killed it. Past its stored attempt bound, or when the retry would come after
    /// its deadline, the operation is dead too; otherwise it is pending again after
    /// `rule.retry_delay`. Decided from the row, so every store writes the same thing.
    pub fn vanished(claim: &Claimed, rule: &VanishRule, now: DateTime<Utc>) -> Self {
        let isolated = claim.isolated;
        let streak = if isolated {
            claim.vanished_streak.saturating_add(1)
        } else {
            0
        };
        let retry_at = now + rule.retry_delay;
        let reason = if isolated && streak >= rule.vanish_limit.max(1) {
            Some(TerminalReason::CrashLoop)
        } else if attempts_exhausted(claim.attempt, claim.max_attempts) {
            Some(TerminalReason::AttemptsExhausted)
        } else if claim.give_up_at.is_some_and(|g| g < retry_at) {
            Some(TerminalReason::DeadlinePassed)
        } else {
            None
        };
        let summary = if isolated {
            format!(
                "{VANISHED_SUMMARY}; the attempt ran isolated, alone in its worker, so this \
                 operation's own attempt killed or stalled it ({streak} isolated in a row)"
            )
        } else {
            format!(
                "{VANISHED_SUMMARY}; the attempt ran beside other work, so the operation is a \
                 suspect: its next attempt runs isolated, alone in its worker"
            )
        };
        let decision = match reason {
            Some(TerminalReason::CrashLoop) => format!(
                "dead: {streak} isolated attempts in a row vanished: its own attempts kill or \
                 stall the worker (crash loop)"
            ),
            Some(TerminalReason::AttemptsExhausted) => "dead: attempts exhausted".to_owned(),
            Some(_) => "dead: the deadline passed".to_owned(),
            None if isolated => "retry alone (isolated)".to_owned(),
            None => "retry alone (isolated), as a suspect".to_owned(),
        };
        let next_action = match reason {
            None => "none: retried automatically",
            Some(TerminalReason::CrashLoop) => {
                "inspect this operation's input for what kills or stalls the worker, fix the \
                 handler or the input, then re-drive this operation alone"
            }
            Some(_) => {
                "inspect the input for what kills or stalls the worker, then re-drive (oprec redrive)"
            }
        };
        Transition {
            target: Target::Vanished {
                next: reason.map_or(Ok(retry_at), Err),
                error: OperationError::new(summary)
                    .decision(decision)
                    .next_action(next_action),
                isolated,
            },
        }
    }

    /// How the store must check that this transition still applies.
    pub fn fence(&self) -> Fence {
        match self.target {
            Target::Vanished { .. } => Fence::ExpiredClaim,
            _ => Fence::Claim,
        }
    }

    /// Whether the attempt vanished.
    pub fn is_vanished(&self) -> bool {
        matches!(self.target, Target::Vanished { .. })
    }

    /// Whether the crash-loop counter (`vanished_streak`) goes up by one: an isolated attempt
    /// vanished. A release keeps it ([`Transition::suspect_after`] is `None`); every other end of
    /// a claim sets it back to zero.
    pub fn counts_toward_crash_loop(&self) -> bool {
        matches!(self.target, Target::Vanished { isolated: true, .. })
    }

    /// Whether the operation is a suspect after this transition: yes after a vanished attempt
    /// that is retried, no after any outcome the attempt wrote itself (it neither crashed nor stalled its worker);
    /// `None` keeps the flag and the crash-loop counter (a release at shutdown says nothing
    /// about the operation).
    pub fn suspect_after(&self) -> Option<bool> {
        match self.target {
            Target::Vanished { next: Ok(_), .. } => Some(true),
            Target::Release { .. } => None,
            _ => Some(false),
        }
    }

    /// The status the operation moves to.
    pub fn status(&self) -> Status {
        match self.target {
            Target::Succeed { .. } => Status::Succeeded,
            Target::Retry { .. } | Target::Snooze { .. } | Target::Release { .. } => {
                Status::Pending
            }
            Target::Dead { .. } => Status::Dead,
            Target::Hold { .. } => Status::Held,
            Target::Reconcile { .. } => Status::Reconciling,
            Target::CancelObsolete => Status::Cancelled,
            Target::Vanished { next: Ok(_), .. } => Status::Pending,
            Target::Vanished { next: Err(_), .. } => Status::Dead,
        }
    }

    /// What the attempt's history row records.
    pub fn attempt_outcome(&self) -> AttemptOutcome {
        match self.target {
            Target::Succeed { .. } => AttemptOutcome::Succeeded,
            Target::Retry { .. } | Target::Hold { .. } => AttemptOutcome::Error,
            Target::Dead { ref failure, .. } => match failure {
                Some(_) => AttemptOutcome::Error,
                None => AttemptOutcome::Rejected,
            },
            Target::Snooze { .. } => AttemptOutcome::Snoozed,
            Target::Reconcile { .. } => AttemptOutcome::Unknown,
            Target::Release { .. } => AttemptOutcome::Released,
            Target::CancelObsolete => AttemptOutcome::Rejected,
            Target::Vanished { .. } => AttemptOutcome::Vanished,
        }
    }

    /// Whether the attempt this transition ends failed: every ending but a success, a release at
    /// shutdown, a vanished attempt (counted apart: nothing was written) and a cancel because the
    /// work was no longer needed. A snooze is a failure of its attempt (the dependency pushed
    /// back, with a class), although the attempt is refunded. One rule for the worker's counts,
    /// its labelled counts and the attempt span's status.
    pub fn failed_attempt(&self) -> bool {
        !matches!(
            self.target,
            Target::Succeed { .. }
                | Target::Release { .. }
                | Target::Vanished { .. }
                | Target::CancelObsolete
        )
    }

    /// The new `next_eligible_at`, for transitions back to pending.
    pub fn next_eligible_at(&self) -> Option<DateTime<Utc>> {
        match self.target {
            Target::Retry { at, .. } | Target::Release { at } => Some(at),
            Target::Vanished { next: Ok(at), .. } => Some(at),
            Target::Snooze { until, .. } => Some(until),
            _ => None,
        }
    }

    /// The failure to store as `last_failure_class` / `last_error`, if the transition carries one.
    pub fn failure(&self) -> Option<(FailureClass, &OperationError)> {
        match &self.target {
            Target::Retry { failure, .. }
            | Target::Snooze { failure, .. }
            | Target::Hold { failure }
            | Target::Reconcile { failure } => Some((failure.0, &failure.1)),
            Target::Dead { failure, .. } => failure.as_ref().map(|f| (f.0, &f.1)),
            _ => None,
        }
    }

    /// The class to store as `last_failure_class` and in the attempt row; `None` keeps the
    /// operation's last class (a vanished attempt has no class of its own).
    pub fn failure_class(&self) -> Option<FailureClass> {
        self.failure().map(|(c, _)| c)
    }

    /// The error to store as `last_error` and in the attempt row; `None` keeps the operation's
    /// last error.
    pub fn error(&self) -> Option<&OperationError> {
        match &self.target {
            Target::Vanished { error, .. } => Some(error),
            _ => self.failure().map(|(_, e)| e),
        }
    }

    /// For terminal transitions other than success: why.
    pub fn terminal_reason(&self) -> Option<TerminalReason> {
        match self.target {
            Target::Dead { reason, .. } => Some(reason),
            Target::Vanished {
                next: Err(reason), ..
            } => Some(reason),
            Target::CancelObsolete => Some(TerminalReason::Obsolete),
            _ => None,
        }
    }

    /// Whether the claim's attempt is given back (a backpressure snooze, within the snooze
    /// budget; a release at shutdown).
    pub fn refunds_attempt(&self) -> bool {
        matches!(self.target, Target::Snooze { .. } | Target::Release { .. })
    }

    /// Whether this is a backpressure snooze, which spends one of the operation's snooze budget.
    pub fn is_snooze(&self) -> bool {
        matches!(self.target, Target::Snooze { .. })
    }

    /// The remote identity of the effect, on success.
    pub fn remote_id(&self) -> Option<&str> {
        match &self.target {
            Target::Succeed { remote_id } => remote_id.as_deref(),
            _ => None,
        }
    }
}

impl RetryPolicy {
    /// Decides what follows an attempt's outcome: the class picks the action, the ladder the time,
    /// and the attempt bound and the deadline the end.
    ///
    /// Rate-limited failures defer to the dependency's declared time capped by
    /// [`RetryPolicy::rate_limit_max`]; other retries take the next rung with the ladder's jitter,
    /// clamped so that jitter never moves an attempt past `give_up_at`. A rung that itself lies past
    /// `give_up_at` ends the operation dead (`deadline_passed`) instead of scheduling a late attempt.
    pub fn transition_for(
        &self,
        claim: &ClaimContext,
        outcome: Outcome,
        now: DateTime<Utc>,
        rng: &mut impl Rng,
    ) -> Transition {
        let failure = match outcome {
            Outcome::Succeeded { remote_id } => return Transition::succeeded(remote_id),
            Outcome::Failed(f) => f,
        };
        let mut failure = failure;
        let default_text = |f: &mut Failure, decision: String, next: &str| {
            if f.error.decision.is_none() {
                f.error.decision = Some(decision);
            }
            if f.error.next_action.is_none() {
                f.error.next_action = Some(next.to_owned());
            }
        };
        let bound = claim.bound(self);
        match failure.class {
            FailureClass::Permanent => {
                default_text(
                    &mut failure,
                    "permanent failure: not retried".into(),
                    "correct the input and submit a new operation",
                );
                Transition::dead(TerminalReason::Permanent, Some(failure))
            }
            FailureClass::Configuration => {
                default_text(
                    &mut failure,
                    "held: configuration must be repaired".into(),
                    "repair the configuration, then release it (oprec release) or resume its dependency (oprec resume --dependency)",
                );
                Transition::hold(failure)
            }
            FailureClass::Unknown if claim.unknowns < self.unknown_retries() => {
                // The remote side honours the effect key: a retry of an effect that did happen
                // is deduplicated there, so a small budget of automatic retries is safe.
                match self.retry_at(claim, FailureClass::Unknown, None, now, rng) {
                    RetryDecision::At(at) => {
                        default_text(
                            &mut failure,
                            format!(
                                "outcome unknown; the remote side honours the effect key: retry at \
                                 {at} (automatic retry {} of {})",
                                claim.unknowns + 1,
                                self.unknown_retries()
                            ),
                            "none: retried automatically, then reconciled if still unknown",
                        );
                        Transition::retry(at, failure)
                    }
                    RetryDecision::Exhausted | RetryDecision::DeadlinePassed { .. } => {
                        default_text(
                            &mut failure,
                            "outcome unknown and no attempt left: no blind retry".into(),
                            "reconcile: find out whether the effect was applied, then record it (oprec reconcile resolve)",
                        );
                        Transition::reconcile(failure)
                    }
                }
            }
            FailureClass::Unknown => {
                default_text(
                    &mut failure,
                    "outcome unknown: no blind retry".into(),
                    "reconcile: find out whether the effect was applied, then record it (oprec reconcile resolve)",
                );
                Transition::reconcile(failure)
            }
            FailureClass::Backpressure if claim.snoozes < self.snooze_budget() => {
                let until = now + self.backpressure_snooze();
                default_text(
                    &mut failure,
                    format!(
                        "snoozed until {until} (attempt refunded; snooze {} of {})",
                        claim.snoozes + 1,
                        self.snooze_budget()
                    ),
                    "none: retried automatically",
                );
                Transition::snooze(until, failure)
            }
            // Past the snooze budget, backpressure climbs the ordinary ladder like a transient
            // failure, so that an operation cannot snooze forever without a deadline.
            FailureClass::Backpressure | FailureClass::Transient | FailureClass::RateLimited => {
                let spent = if failure.class == FailureClass::Backpressure {
                    format!("snooze budget of {} spent: ", self.snooze_budget())
                } else {
                    String::new()
                };
                match self.retry_at(claim, failure.class, failure.retry_after, now, rng) {
                    RetryDecision::At(at) => {
                        default_text(
                            &mut failure,
                            format!("{spent}retry at {at} (attempt {})", claim.attempt + 1),
                            "none: retried automatically",
                        );
                        Transition::retry(at, failure)
                    }
                    RetryDecision::Exhausted => {
                        let of = bound.map(|b| format!(" of {b}")).unwrap_or_default();
                        default_text(
                            &mut failure,
                            format!(
                                "dead: attempts exhausted after attempt {}{of}",
                                claim.attempt
                            ),
                            "re-drive once the cause is fixed",
                        );
                        Transition::dead(TerminalReason::AttemptsExhausted, Some(failure))
                    }
                    RetryDecision::DeadlinePassed { planned_at } => {
                        let deadline = claim.give_up_at.unwrap_or(planned_at);
                        default_text(
                            &mut failure,
                            format!(
                                "dead: the next attempt ({planned_at}) would be after the deadline {deadline}"
                            ),
                            "re-drive with a later deadline if the result is still useful (oprec redrive --extend-deadline)",
                        );
                        Transition::dead(TerminalReason::DeadlinePassed, Some(failure))
                    }
                }
            }
        }
    }

    /// When a retryable (transient or rate-limited) failure runs again, or why it does not: the
    /// ladder and bounds of [`RetryPolicy::transition_for`] without the error text, cheap enough to
    /// drive a simulation of millions of attempts.
    pub fn retry_at(
        &self,
        claim: &ClaimContext,
        class: FailureClass,
        retry_after: Option<chrono::Duration>,
        now: DateTime<Utc>,
        rng: &mut impl Rng,
    ) -> RetryDecision {
        if attempts_exhausted(claim.attempt, claim.bound(self)) {
            return RetryDecision::Exhausted;
        }
        let Some(rung) = self.ladder().delay_before(claim.attempt + 1, class) else {
            return RetryDecision::Exhausted;
        };
        let (planned, drawn) = match (class, retry_after) {
            (FailureClass::RateLimited, Some(declared)) => {
                let d = declared.clamp(chrono::Duration::zero(), self.rate_limit_max());
                (d, d)
            }
            _ => (rung, self.ladder().jitter().apply(rung, rng)),
        };
        let planned_at = now + planned;
        let at = now + drawn;
        match claim.give_up_at {
            Some(deadline) if planned_at > deadline => RetryDecision::DeadlinePassed { planned_at },
            Some(deadline) => RetryDecision::At(at.min(deadline)),
            None => RetryDecision::At(at),
        }
    }
}

/// Whether a retryable failure runs again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RetryDecision {
    /// Again, not before this time.
    At(DateTime<Utc>),
    /// The attempt bound or the ladder ran out.
    Exhausted,
    /// The next rung would come after the deadline.
    DeadlinePassed {
        /// When the next attempt would have been.
        planned_at: DateTime<Utc>,
    },
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Jitter, Ladder};
    use chrono::{Duration, TimeZone};
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    fn policy(jitter: Jitter) -> RetryPolicy {
        RetryPolicy::builder()
            .timeout(Duration::seconds(30))
            .max_attempts(6)
            .external_io(Ladder::schedule_secs(&[0, 60, 300, 1500, 7500, 37500]))
            .jitter(jitter)
            .build()
            .unwrap()
    }

    fn t0() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 1, 5, 9, 0, 0).unwrap()
    }

    fn ctx(attempt: u32, give_up_at: Option<DateTime<Utc>>) -> ClaimContext {
        ClaimContext {
            attempt,
            max_attempts: Some(6),
            give_up_at,
            snoozes: 0,
            unknowns: 0,
        }
    }

    #[test]
    fn each_class_has_its_own_next_action() {
        let p = policy(Jitter::None);
        let rng = &mut StdRng::seed_from_u64(0);
        let now = t0();
        let f = |c| Outcome::Failed(Failure::new(c, OperationError::new("x")));
        let mut status = |c| p.transition_for(&ctx(1, None), f(c), now, rng).status();
        assert_eq!(status(FailureClass::Transient), Status::Pending);
        assert_eq!(status(FailureClass::RateLimited), Status::Pending);
        assert_eq!(status(FailureClass::Backpressure), Status::Pending);
        assert_eq!(status(FailureClass::Permanent), Status::Dead);
        assert_eq!(status(FailureClass::Configuration), Status::Held);
        assert_eq!(status(FailureClass::Unknown), Status::Reconciling);
        let snooze = p.transition_for(&ctx(1, None), f(FailureClass::Backpressure), now, rng);
        assert!(snooze.refunds_attempt());
        assert_eq!(snooze.attempt_outcome(), AttemptOutcome::Snoozed);
    }

    #[test]
    fn backpressure_snoozes_within_its_budget_then_climbs_the_ladder() {
        let p = RetryPolicy::builder()
            .timeout(Duration::seconds(30))
            .max_attempts(6)
            .external_io(Ladder::schedule_secs(&[0, 60, 300, 1500, 7500, 37500]))
            .snooze_budget(2)
            .jitter(crate::Jitter::None)
            .build()
            .unwrap();
        let rng = &mut StdRng::seed_from_u64(0);
        let pressure = || Outcome::Failed(Failure::backpressure("pool exhausted"));
        let at = |snoozes| ClaimContext {
            snoozes,
            ..ctx(1, None)
        };
        for snoozes in 0..2 {
            let t = p.transition_for(&at(snoozes), pressure(), t0(), rng);
            assert!(t.is_snooze() && t.refunds_attempt(), "snooze {snoozes}");
            assert_eq!(t.next_eligible_at(), Some(t0() + Duration::seconds(5)));
        }
        // The budget is spent: the ordinary ladder, and the attempt counts.
        let t = p.transition_for(&at(2), pressure(), t0(), rng);
        assert!(!t.is_snooze() && !t.refunds_attempt());
        assert_eq!(t.attempt_outcome(), AttemptOutcome::Error);
        assert_eq!(t.next_eligible_at(), Some(t0() + Duration::seconds(60)));
        assert!(
            t.error()
                .and_then(|e| e.decision.as_deref())
                .is_some_and(|d| d.contains("snooze budget of 2 spent")),
            "{t:?}"
        );
        // ... and ends with the attempt bound like any retry.
        let last = ClaimContext {
            snoozes: 2,
            ..ctx(6, None)
        };
        let t = p.transition_for(&last, pressure(), t0(), rng);
        assert_eq!(t.terminal_reason(), Some(TerminalReason::AttemptsExhausted));
        assert_eq!(p.snooze_budget(), 2);
        assert_eq!(
            policy(Jitter::None).snooze_budget(),
            crate::DEFAULT_SNOOZE_BUDGET
        );
    }

    #[test]
    fn an_unknown_outcome_reconciles_at_once_unless_the_effect_key_is_honoured() {
        let rng = &mut StdRng::seed_from_u64(0);
        let unknown = || Outcome::Failed(Failure::unknown("unclassified error: reset"));
        // Not declared: no blind retry.
        let t = policy(Jitter::None).transition_for(&ctx(1, None), unknown(), t0(), rng);
        assert_eq!(t.status(), Status::Reconciling);
        assert_eq!(policy(Jitter::None).unknown_retries(), 0);
        // Declared: the stated default budget of automatic retries on the ladder, then reconcile.
        let p = RetryPolicy::builder()
            .timeout(Duration::seconds(30))
            .max_attempts(6)
            .external_io(Ladder::schedule_secs(&[0, 60, 300, 1500, 7500, 37500]))
            .remote_honours_effect_key()
            .jitter(crate::Jitter::None)
            .build()
            .unwrap();
        assert_eq!(p.unknown_retries(), crate::DEFAULT_UNKNOWN_RETRIES);
        let at = |attempt, unknowns| ClaimContext {
            unknowns,
            ..ctx(attempt, None)
        };
        let t = p.transition_for(&at(1, 0), unknown(), t0(), rng);
        assert_eq!(t.status(), Status::Pending);
        assert_eq!(t.attempt_outcome(), AttemptOutcome::Error);
        assert_eq!(t.failure_class(), Some(FailureClass::Unknown));
        assert_eq!(t.next_eligible_at(), Some(t0() + Duration::seconds(60)));
        let t = p.transition_for(&at(2, 1), unknown(), t0(), rng);
        assert_eq!(t.next_eligible_at(), Some(t0() + Duration::seconds(300)));
        let t = p.transition_for(&at(3, 2), unknown(), t0(), rng);
        assert_eq!(t.status(), Status::Reconciling, "the budget is spent");
        // No attempt left: reconcile, not dead: the effect may have happened.
        let t = p.transition_for(&at(6, 0), unknown(), t0(), rng);
        assert_eq!(t.status(), Status::Reconciling);
        // Configurable.
        let none = RetryPolicy::builder()
            .timeout(Duration::seconds(30))
            .max_attempts(6)
            .external_io(Ladder::schedule_secs(&[0, 60]))
            .remote_honours_effect_key()
            .unknown_retries(0)
            .jitter(crate::Jitter::None)
            .build()
            .unwrap();
        let t = none.transition_for(&at(1, 0), unknown(), t0(), rng);
        assert_eq!(t.status(), Status::Reconciling);
    }

    #[test]
    fn a_release_is_refunded_and_keeps_the_suspect() {
        let t = Transition::release(t0());
        assert!(t.refunds_attempt());
        assert_eq!(t.suspect_after(), None);
        assert!(!t.counts_toward_crash_loop());
        assert_eq!(t.attempt_outcome(), AttemptOutcome::Released);
    }

    #[test]
    fn failed_attempts_are_every_ending_but_success_release_vanish_and_obsolete() {
        let failed = |t: Transition| t.failed_attempt();
        assert!(!failed(Transition::succeeded(None)));
        assert!(!failed(Transition::release(t0())));
        assert!(!failed(Transition::cancel_obsolete()));
        assert!(failed(Transition::retry(t0(), Failure::transient("503"))));
        assert!(failed(Transition::snooze(
            t0(),
            Failure::transient("slow down")
        )));
    }

    #[test]
    fn transient_climbs_the_ladder_then_ends() {
        let p = policy(Jitter::None);
        let rng = &mut StdRng::seed_from_u64(0);
        for (attempt, wait) in [(1, 60), (2, 300), (3, 1500), (4, 7500), (5, 37500)] {
            let t = p.transition_for(
                &ctx(attempt, None),
                Failure::transient("503").into(),
                t0(),
                rng,
            );
            assert_eq!(t.next_eligible_at(), Some(t0() + Duration::seconds(wait)));
        }
        let t = p.transition_for(&ctx(6, None), Failure::transient("503").into(), t0(), rng);
        assert_eq!(t.terminal_reason(), Some(TerminalReason::AttemptsExhausted));
    }

    #[test]
    fn rate_limit_defers_to_the_declared_time_capped_locally() {
        let p = policy(Jitter::Full);
        let rng = &mut StdRng::seed_from_u64(0);
        let r = |s| Failure::rate_limited("429", Some(Duration::seconds(s))).into();
        let t = p.transition_for(&ctx(1, None), r(17), t0(), rng);
        assert_eq!(t.next_eligible_at(), Some(t0() + Duration::seconds(17)));
        let t = p.transition_for(&ctx(1, None), r(86_400), t0(), rng);
        assert_eq!(t.next_eligible_at(), Some(t0() + Duration::hours(1)));
    }

    #[test]
    fn jitter_never_moves_an_attempt_past_the_deadline() {
        let p = policy(Jitter::Proportional(1.0));
        let rng = &mut StdRng::seed_from_u64(3);
        let deadline = t0() + Duration::seconds(65);
        for _ in 0..500 {
            let t = p.transition_for(
                &ctx(1, Some(deadline)),
                Failure::transient("x").into(),
                t0(),
                rng,
            );
            assert!(t.next_eligible_at().unwrap() <= deadline);
        }
        // A rung that itself lies past the deadline is not scheduled at all.
        let t = p.transition_for(
            &ctx(2, Some(deadline)),
            Failure::transient("x").into(),
            t0(),
            rng,
        );
        assert_eq!(t.terminal_reason(), Some(TerminalReason::DeadlinePassed));
    }

    #[test]
    fn permanent_failure_keeps_field_and_says_what_next() {
        let p = policy(Jitter::None);
        let rng = &mut StdRng::seed_from_u64(0);
        let err = OperationError::new("postal code is not valid").field("destination postal code");
        let t = p.transition_for(&ctx(1, None), Failure::permanent(err).into(), t0(), rng);
        let (class, e) = t.failure().unwrap();
        assert_eq!(class, FailureClass::Permanent);
        assert_eq!(e.field.as_deref(), Some("destination postal code"));
        assert_eq!(
            e.next_action.as_deref(),
            Some("correct the input and submit a new operation")
        );
    }
}
