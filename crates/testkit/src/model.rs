//! A model test of the operation state machine: proptest-state-machine generates sequences of
//! actions (enqueue, claims, heartbeats, completions with every outcome, lease expiry and rescue,
//! deadlines, cancel, quarantine, release, pause, reconcile and re-drive), a reference model
//! predicts what each does, and the driver applies them to a real store and compares, row by row,
//! after every step. A backend runs it with [`model_tests!`](crate::model_tests).
//!
//! Besides agreeing with the model, every step must keep the store's own invariants: a terminal
//! operation changes only by re-drive; a status changes only along an edge of
//! [`Status::can_transition_to`] (or by re-drive); the attempt count never goes down except by a
//! snooze's refund or a re-drive; a stale token changes nothing; an operation is running exactly
//! when it has a claim token and a lease.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::Ordering;

use chrono::{DateTime, Duration, Utc};
use oprec_core::operator::{
    ControlAction, ControlScope, ControlSetParams, OperationFilter, QuarantineParams, RedriveMode,
    RedriveParams, ReleaseParams, Resolution, ResolveParams,
};
use oprec_core::store::{
    ClaimByIdsParams, ClaimEligibleParams, CompleteParams, CompleteResult, HeartbeatParams,
    RescueParams,
};
use oprec_core::{
    Error, Failure, FailureClass, NewOperation, Operation, OperationError, OperationId,
    OperatorStore, Status, TerminalReason, Transition,
};
use proptest::prelude::*;
use proptest::test_runner::{Config, FileFailurePersistence, TestCaseError, TestRunner};
use proptest_state_machine::ReferenceStateMachine;
use uuid::Uuid;

use crate::{Harness, start_time};

/// The kind every modelled operation has.
pub const KIND: &str = "model.op";
/// The most operations one sequence creates.
const MAX_OPS: usize = 4;
/// The lease of every claim and heartbeat, in seconds.
const LEASE_SECS: i64 = 30;
/// Vanished attempts in a row after which the rescuer ends an operation (crash loop).
const VANISH_LIMIT: u32 = 2;
/// How long a rescued operation waits, in seconds.
const RESCUE_DELAY_SECS: i64 = 5;

/// Which claim token a heartbeat or completion presents.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TokenPick {
    /// The newest token issued for the operation (stale unless it is running).
    Current,
    /// An older token of the operation (a zombie's), or a made-up one if there is none.
    Old(usize),
    /// A token never issued.
    Foreign,
}

/// How a completion ends a claim.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ending {
    /// Succeeded.
    Succeed,
    /// Transient failure: retry after `secs`.
    Transient(i64),
    /// Rate-limited, with the dependency's retry-after in seconds.
    RateLimited(i64),
    /// Backpressure: snoozed for `secs`, the attempt refunded.
    Snooze(i64),
    /// Permanent failure: dead.
    Permanent,
    /// Attempts exhausted: dead.
    Exhausted,
    /// Unknown outcome: reconciling.
    Unknown,
    /// Configuration failure: held.
    Hold,
    /// Released on shutdown: pending again after `secs`, the attempt kept.
    Release(i64),
    /// No longer needed: cancelled as obsolete.
    Obsolete,
}

/// One step of a sequence.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// Enqueue, with an idempotency key out of a small set, a delay, a deadline and an attempt
    /// bound (seconds from now).
    Enqueue {
        /// The key, if any.
        key: Option<u8>,
        /// Delay before the first attempt.
        delay: i64,
        /// Deadline from now.
        deadline: Option<i64>,
        /// Attempt bound.
        max_attempts: Option<u32>,
    },
    /// Claim one operation by id, as a worker of this kind or of another.
    ClaimById {
        /// Which operation.
        op: usize,
        /// Whether the claimer runs this kind.
        same_kind: bool,
    },
    /// Claim up to `limit` eligible operations.
    ClaimEligible {
        /// The limit.
        limit: u32,
    },
    /// Extend a lease.
    Heartbeat {
        /// Which operation.
        op: usize,
        /// With which token.
        token: TokenPick,
    },
    /// End a claim.
    Complete {
        /// Which operation.
        op: usize,
        /// With which token.
        token: TokenPick,
        /// How.
        ending: Ending,
    },
    /// Move the clock.
    Advance {
        /// Seconds.
        secs: i64,
    },
    /// The rescuer's pass over expired leases.
    Rescue,
    /// The rescuer's pass over waiting operations past their deadline.
    EndPastDeadline,
    /// Cancel one operation.
    Cancel {
        /// Which.
        op: usize,
    },
    /// Quarantine one operation (pending to held).
    Quarantine {
        /// Which.
        op: usize,
    },
    /// Release one held operation.
    ReleaseHeld {
        /// Which.
        op: usize,
    },
    /// Pause or resume the kind.
    Pause {
        /// Pause (true) or resume (false).
        on: bool,
    },
    /// Resolve one reconciliation.
    Resolve {
        /// Which.
        op: usize,
        /// Applied or not applied.
        applied: bool,
    },
    /// Re-drive one terminal operation in place.
    Redrive {
        /// Which.
        op: usize,
        /// Cancelled operations too.
        include_cancelled: bool,
        /// New deadline, seconds after now.
        extend: Option<i64>,
    },
}

/// The model of one operation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelOp {
    key: Option<u8>,
    status: Status,
    attempt: u32,
    max_attempts: Option<u32>,
    next_eligible_at: DateTime<Utc>,
    give_up_at: Option<DateTime<Utc>>,
    lease_until: Option<DateTime<Utc>>,
    /// Claim tokens issued so far; the newest is the valid one while running.
    claims: usize,
    terminal_reason: Option<TerminalReason>,
    last_failure_class: Option<FailureClass>,
    vanished_streak: u32,
    redrive_count: u32,
    /// Rows of attempt history.
    history: usize,
}

/// The reference model: the clock, the operations in creation order and the pause.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Model {
    now: DateTime<Utc>,
    ops: Vec<ModelOp>,
    paused: bool,
}

/// What the model predicts an action returns.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Expect {
    /// Enqueue: the operation (by index) and whether it is new.
    Enqueued { op: usize, created: bool },
    /// Claims: the operations claimed, by index, in the order returned.
    Claimed(Vec<usize>),
    /// Heartbeat or completion: whether the token held.
    Fenced(bool),
    /// Rescue: (vanished, retried, dead).
    Rescued(u64, u64, u64),
    /// A count of operations changed.
    Count(u64),
    /// Resolve: the new status, or an error if not reconciling.
    Resolved(Option<Status>),
    /// Nothing to check but the rows.
    Nothing,
}

impl Model {
    fn eligible(&self, o: &ModelOp) -> bool {
        !self.paused
            && o.status == Status::Pending
            && o.next_eligible_at <= self.now
            && o.give_up_at.is_none_or(|g| g >= self.now)
    }

    fn claim(&mut self, i: usize) {
        let now = self.now;
        let o = &mut self.ops[i];
        o.status = Status::Running;
        o.attempt += 1;
        o.claims += 1;
        o.lease_until = Some(now + Duration::seconds(LEASE_SECS));
    }

    fn holds(&self, op: usize, token: TokenPick) -> bool {
        let o = &self.ops[op];
        o.status == Status::Running && token == TokenPick::Current
    }

    fn end(o: &mut ModelOp, status: Status, reason: Option<TerminalReason>) {
        o.status = status;
        o.terminal_reason = reason;
        o.lease_until = None;
    }

    /// Applies `action` and returns what the store should answer.
    fn step(&mut self, action: &Action) -> Expect {
        let now = self.now;
        match *action {
            Action::Enqueue {
                key,
                delay,
                deadline,
                max_attempts,
            } => {
                if let Some(i) = key.and_then(|k| self.ops.iter().position(|o| o.key == Some(k))) {
                    return Expect::Enqueued {
                        op: i,
                        created: false,
                    };
                }
                self.ops.push(ModelOp {
                    key,
                    status: Status::Pending,
                    attempt: 0,
                    max_attempts,
                    next_eligible_at: now + Duration::seconds(delay),
                    give_up_at: deadline.map(|d| now + Duration::seconds(d)),
                    lease_until: None,
                    claims: 0,
                    terminal_reason: None,
                    last_failure_class: None,
                    vanished_streak: 0,
                    redrive_count: 0,
                    history: 0,
                });
                Expect::Enqueued {
                    op: self.ops.len() - 1,
                    created: true,
                }
            }
            Action::ClaimById { op, same_kind } => {
                if same_kind && self.eligible(&self.ops[op]) {
                    self.claim(op);
                    Expect::Claimed(vec![op])
                } else {
                    Expect::Claimed(vec![])
                }
            }
            Action::ClaimEligible { limit } => {
                let mut picked: Vec<usize> = (0..self.ops.len())
                    .filter(|&i| self.eligible(&self.ops[i]))
                    .collect();
                picked.sort_by_key(|&i| (self.ops[i].next_eligible_at, i));
                picked.truncate(limit as usize);
                for &i in &picked {
                    self.claim(i);
                }
                Expect::Claimed(picked)
            }
            Action::Heartbeat { op, token } => {
                let held = self.holds(op, token);
                if held {
                    self.ops[op].lease_until = Some(now + Duration::seconds(LEASE_SECS));
                }
                Expect::Fenced(held)
            }
            Action::Complete { op, token, ending } => {
                if !self.holds(op, token) {
                    return Expect::Fenced(false);
                }
                let o = &mut self.ops[op];
                o.history += 1;
                o.vanished_streak = 0;
                let at = |secs: i64| now + Duration::seconds(secs);
                match ending {
                    Ending::Succeed => Self::end(o, Status::Succeeded, None),
                    Ending::Transient(s) | Ending::RateLimited(s) => {
                        Self::end(o, Status::Pending, None);
                        o.next_eligible_at = at(s);
                        o.last_failure_class = Some(if matches!(ending, Ending::Transient(_)) {
                            FailureClass::Transient
                        } else {
                            FailureClass::RateLimited
                        });
                    }
                    Ending::Snooze(s) => {
                        Self::end(o, Status::Pending, None);
                        o.next_eligible_at = at(s);
                        o.attempt -= 1;
                        o.last_failure_class = Some(FailureClass::Backpressure);
                    }
                    Ending::Permanent => {
                        Self::end(o, Status::Dead, Some(TerminalReason::Permanent));
                        o.last_failure_class = Some(FailureClass::Permanent);
                    }
                    Ending::Exhausted => {
                        Self::end(o, Status::Dead, Some(TerminalReason::AttemptsExhausted));
                        o.last_failure_class = Some(FailureClass::Transient);
                    }
                    Ending::Unknown => {
                        Self::end(o, Status::Reconciling, None);
                        o.last_failure_class = Some(FailureClass::Unknown);
                    }
                    Ending::Hold => {
                        Self::end(o, Status::Held, None);
                        o.last_failure_class = Some(FailureClass::Configuration);
                    }
                    Ending::Release(s) => {
                        Self::end(o, Status::Pending, None);
                        o.next_eligible_at = at(s);
                    }
                    Ending::Obsolete => {
                        Self::end(o, Status::Cancelled, Some(TerminalReason::Obsolete))
                    }
                }
                Expect::Fenced(true)
            }
            Action::Advance { secs } => {
                self.now += Duration::seconds(secs);
                Expect::Nothing
            }
            Action::Rescue => {
                let retry_at = now + Duration::seconds(RESCUE_DELAY_SECS);
                let (mut vanished, mut retried, mut dead) = (0, 0, 0);
                for o in &mut self.ops {
                    if o.status != Status::Running || o.lease_until.is_none_or(|l| l >= now) {
                        continue;
                    }
                    vanished += 1;
                    o.history += 1;
                    let reason = if o.vanished_streak + 1 >= VANISH_LIMIT {
                        Some(TerminalReason::CrashLoop)
                    } else if o.max_attempts.is_some_and(|m| o.attempt >= m) {
                        Some(TerminalReason::AttemptsExhausted)
                    } else if o.give_up_at.is_some_and(|g| g < retry_at) {
                        Some(TerminalReason::DeadlinePassed)
                    } else {
                        None
                    };
                    o.vanished_streak += 1;
                    match reason {
                        Some(r) => {
                            dead += 1;
                            Self::end(o, Status::Dead, Some(r));
                        }
                        None => {
                            retried += 1;
                            Self::end(o, Status::Pending, None);
                            o.next_eligible_at = retry_at;
                        }
                    }
                }
                Expect::Rescued(vanished, retried, dead)
            }
            Action::EndPastDeadline => {
                let mut n = 0;
                for o in &mut self.ops {
                    if matches!(o.status, Status::Pending | Status::Held)
                        && o.give_up_at.is_some_and(|g| g < now)
                    {
                        n += 1;
                        Self::end(o, Status::Dead, Some(TerminalReason::DeadlinePassed));
                    }
                }
                Expect::Count(n)
            }
            Action::Cancel { op } => {
                let o = &mut self.ops[op];
                let n = matches!(
                    o.status,
                    Status::Pending | Status::Held | Status::Reconciling
                );
                if n {
                    Self::end(o, Status::Cancelled, Some(TerminalReason::Operator));
                }
                Expect::Count(n.into())
            }
            Action::Quarantine { op } => {
                let o = &mut self.ops[op];
                let n = o.status == Status::Pending;
                if n {
                    o.status = Status::Held;
                }
                Expect::Count(n.into())
            }
            Action::ReleaseHeld { op } => {
                let o = &mut self.ops[op];
                let n = o.status == Status::Held;
                if n {
                    o.status = Status::Pending;
                    o.next_eligible_at = now;
                }
                Expect::Count(n.into())
            }
            Action::Pause { on } => {
                self.paused = on;
                Expect::Nothing
            }
            Action::Resolve { op, applied } => {
                let o = &mut self.ops[op];
                if o.status != Status::Reconciling {
                    return Expect::Resolved(None);
                }
                o.next_eligible_at = now;
                if applied {
                    Self::end(o, Status::Succeeded, None);
                } else if o.max_attempts.is_some_and(|m| o.attempt >= m) {
                    Self::end(o, Status::Dead, Some(TerminalReason::AttemptsExhausted));
                } else {
                    Self::end(o, Status::Pending, None);
                }
                Expect::Resolved(Some(o.status))
            }
            Action::Redrive {
                op,
                include_cancelled,
                extend,
            } => {
                let o = &mut self.ops[op];
                let n = o.status == Status::Dead
                    || (include_cancelled && o.status == Status::Cancelled);
                if n {
                    Self::end(o, Status::Pending, None);
                    o.attempt = 0;
                    o.next_eligible_at = now;
                    o.vanished_streak = 0;
                    o.redrive_count += 1;
                    o.give_up_at = match extend {
                        Some(s) => Some(now + Duration::seconds(s)),
                        None => o.give_up_at.filter(|g| *g >= now),
                    };
                }
                Expect::Count(n.into())
            }
        }
    }
}

fn token_pick() -> impl Strategy<Value = TokenPick> {
    prop_oneof![
        6 => Just(TokenPick::Current),
        2 => (0..4usize).prop_map(TokenPick::Old),
        1 => Just(TokenPick::Foreign),
    ]
}

fn ending() -> impl Strategy<Value = Ending> {
    prop_oneof![
        3 => Just(Ending::Succeed),
        3 => (0..40i64).prop_map(Ending::Transient),
        1 => (0..40i64).prop_map(Ending::RateLimited),
        2 => (1..40i64).prop_map(Ending::Snooze),
        2 => Just(Ending::Permanent),
        1 => Just(Ending::Exhausted),
        2 => Just(Ending::Unknown),
        1 => Just(Ending::Hold),
        1 => (0..10i64).prop_map(Ending::Release),
        1 => Just(Ending::Obsolete),
    ]
}

impl ReferenceStateMachine for Model {
    type State = Model;
    type Transition = Action;

    fn init_state() -> BoxedStrategy<Model> {
        Just(Model {
            now: start_time(),
            ops: Vec::new(),
            paused: false,
        })
        .boxed()
    }

    fn transitions(state: &Model) -> BoxedStrategy<Action> {
        let enqueue = (
            proptest::option::weighted(0.5, 0..3u8),
            prop_oneof![Just(0i64), 1..30i64],
            proptest::option::weighted(0.4, 1..120i64),
            proptest::option::weighted(0.4, 1..4u32),
        )
            .prop_map(|(key, delay, deadline, max_attempts)| Action::Enqueue {
                key,
                delay,
                deadline,
                max_attempts,
            });
        let global = prop_oneof![
            4 => enqueue,
            4 => prop_oneof![Just(1u32), Just(1000u32)]
                .prop_map(|limit| Action::ClaimEligible { limit }),
            4 => prop_oneof![1..10i64, 25..45i64].prop_map(|secs| Action::Advance { secs }),
            2 => Just(Action::Rescue),
            1 => Just(Action::EndPastDeadline),
            1 => any::<bool>().prop_map(|on| Action::Pause { on }),
        ];
        if state.ops.is_empty() {
            return global.boxed();
        }
        // Mostly act on an operation in the state the action is for (a completion of a running
        // one), sometimes on any (a stale or refused action).
        let pick = |wanted: &dyn Fn(Status) -> bool| -> BoxedStrategy<usize> {
            let matching: Vec<usize> = (0..state.ops.len())
                .filter(|&i| wanted(state.ops[i].status))
                .collect();
            let any = 0..state.ops.len();
            if matching.is_empty() {
                any.boxed()
            } else {
                prop_oneof![4 => proptest::sample::select(matching), 1 => any].boxed()
            }
        };
        let running = pick(&|s| s == Status::Running);
        let waiting = pick(&|s| matches!(s, Status::Pending | Status::Held | Status::Reconciling));
        let some_op = pick(&|_| true);
        prop_oneof![
            8 => global,
            2 => (some_op, prop::bool::weighted(0.85))
                .prop_map(|(op, same_kind)| Action::ClaimById { op, same_kind }),
            2 => (running.clone(), token_pick())
                .prop_map(|(op, token)| Action::Heartbeat { op, token }),
            8 => (running, token_pick(), ending())
                .prop_map(|(op, token, ending)| Action::Complete { op, token, ending }),
            1 => waiting.prop_map(|op| Action::Cancel { op }),
            1 => pick(&|s| s == Status::Pending).prop_map(|op| Action::Quarantine { op }),
            1 => pick(&|s| s == Status::Held).prop_map(|op| Action::ReleaseHeld { op }),
            2 => (pick(&|s| s == Status::Reconciling), any::<bool>())
                .prop_map(|(op, applied)| Action::Resolve { op, applied }),
            2 => (
                pick(&|s| s.is_terminal()),
                any::<bool>(),
                proptest::option::of(1..120i64)
            )
                .prop_map(|(op, include_cancelled, extend)| Action::Redrive {
                    op,
                    include_cancelled,
                    extend,
                }),
        ]
        .boxed()
    }

    fn preconditions(state: &Model, action: &Action) -> bool {
        let n = state.ops.len();
        match *action {
            Action::Enqueue { key, .. } => {
                n < MAX_OPS || key.is_some_and(|k| state.ops.iter().any(|o| o.key == Some(k)))
            }
            Action::ClaimById { op, .. }
            | Action::Heartbeat { op, .. }
            | Action::Complete { op, .. }
            | Action::Cancel { op }
            | Action::Quarantine { op }
            | Action::ReleaseHeld { op }
            | Action::Resolve { op, .. }
            | Action::Redrive { op, .. } => op < n,
            _ => true,
        }
    }

    fn apply(mut state: Model, action: &Action) -> Model {
        state.step(action);
        state
    }
}

/// How many sequences a backend runs unless it says otherwise.
pub const DEFAULT_CASES: u32 = 48;
/// The most steps in a sequence.
pub const MAX_STEPS: usize = 30;

/// A boxed future of a fresh harness, as the backend's setup makes it.
pub type SetupFuture<S> = Pin<Box<dyn Future<Output = Harness<S>>>>;

/// Runs the model test: `cases` sequences (`OPREC_MODEL_CASES` overrides) of up to [`MAX_STEPS`] actions, each on a fresh store
/// from `setup`, shrinking a failure to a short sequence and persisting its seed next to
/// `source_file` (`<file>.proptest-regressions`), so it runs first from then on.
pub fn run<S, F>(setup: F, cases: u32, source_file: &'static str)
where
    S: OperatorStore,
    F: Fn() -> SetupFuture<S>,
{
    let cases = std::env::var("OPREC_MODEL_CASES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(cases);
    let config = Config {
        cases,
        max_shrink_iters: 400,
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource(
            "proptest-regressions",
        ))),
        source_file: Some(source_file),
        ..Config::default()
    };
    let mut runner = TestRunner::new(config);
    let result = runner.run(
        &Model::sequential_strategy(1..=MAX_STEPS),
        |(initial, actions, seen)| {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            rt.block_on(async {
                let harness = setup().await;
                let mut driver = Driver {
                    harness,
                    model: initial,
                    ids: Vec::new(),
                    tokens: Vec::new(),
                };
                for (i, action) in actions.iter().enumerate() {
                    if let Some(seen) = &seen {
                        seen.fetch_add(1, Ordering::SeqCst);
                    }
                    if std::env::var("OPREC_MODEL_TRACE").is_ok() {
                        eprintln!("step {i}: {action:?}");
                    }
                    driver
                        .step(action)
                        .await
                        .map_err(|e| TestCaseError::fail(format!("step {i} {action:?}: {e}")))?;
                }
                Ok(())
            })
        },
    );
    if let Err(e) = result {
        panic!("the store disagrees with the operation model: {e}");
    }
}

/// Drives a real store alongside the model.
struct Driver<S> {
    harness: Harness<S>,
    model: Model,
    /// The store's id of each modelled operation.
    ids: Vec<OperationId>,
    /// The tokens issued to each operation, oldest first.
    tokens: Vec<Vec<Uuid>>,
}

type StepResult = std::result::Result<(), String>;

macro_rules! ensure {
    ($cond:expr, $($fmt:tt)+) => {
        if !$cond {
            return Err(format!($($fmt)+));
        }
    };
}

impl<S: OperatorStore> Driver<S> {
    fn token(&self, op: usize, pick: TokenPick) -> Uuid {
        let issued = &self.tokens[op];
        match pick {
            TokenPick::Current => issued.last().copied().unwrap_or_else(Uuid::now_v7),
            TokenPick::Old(i) if issued.len() >= 2 => issued[i % (issued.len() - 1)],
            TokenPick::Old(_) | TokenPick::Foreign => Uuid::now_v7(),
        }
    }

    fn failure(class: FailureClass) -> Failure {
        Failure::new(class, OperationError::new(format!("model: {class}")))
    }

    fn transition(&self, ending: Ending) -> Transition {
        let at = |secs: i64| self.model.now + Duration::seconds(secs);
        match ending {
            Ending::Succeed => Transition::succeeded(None),
            Ending::Transient(s) => {
                Transition::retry(at(s), Self::failure(FailureClass::Transient))
            }
            Ending::RateLimited(s) => Transition::retry(
                at(s),
                Failure::rate_limited("model: rate limited", Some(Duration::seconds(s))),
            ),
            Ending::Snooze(s) => {
                Transition::snooze(at(s), Self::failure(FailureClass::Backpressure))
            }
            Ending::Permanent => Transition::dead(
                TerminalReason::Permanent,
                Some(Self::failure(FailureClass::Permanent)),
            ),
            Ending::Exhausted => Transition::dead(
                TerminalReason::AttemptsExhausted,
                Some(Self::failure(FailureClass::Transient)),
            ),
            Ending::Unknown => Transition::reconcile(Self::failure(FailureClass::Unknown)),
            Ending::Hold => Transition::hold(Self::failure(FailureClass::Configuration)),
            Ending::Release(s) => Transition::release(at(s)),
            Ending::Obsolete => Transition::cancel_obsolete(),
        }
    }

    fn filter(&self, op: usize) -> OperationFilter {
        OperationFilter {
            ids: vec![self.ids[op]],
            ..OperationFilter::default()
        }
    }

    async fn rows(&self) -> Vec<(Operation, usize)> {
        let mut rows = Vec::with_capacity(self.ids.len());
        for id in &self.ids {
            let d = self.harness.get(*id).await;
            rows.push((d.operation, d.attempts.len()));
        }
        rows
    }

    fn claimed(&mut self, got: Vec<Operation>) -> Vec<usize> {
        got.into_iter()
            .map(|o| {
                let i = self
                    .ids
                    .iter()
                    .position(|id| *id == o.id)
                    .expect("known id");
                self.tokens[i].push(o.claim_token.expect("a claim has a token"));
                i
            })
            .collect()
    }

    /// Applies `action` to the model and the store and checks that they agree.
    async fn step(&mut self, action: &Action) -> StepResult {
        let before = self.rows().await;
        let expect = self.model.step(action);
        let now = self.model.now;
        let store = &self.harness.store;
        let claimant = self.harness.claimant("model-worker");
        let got = match *action {
            Action::Enqueue {
                key,
                delay,
                deadline,
                max_attempts,
            } => {
                let id = OperationId::new();
                let done = store
                    .operation_insert(NewOperation {
                        id,
                        kind: KIND.to_owned(),
                        idempotency_key: key.map(|k| format!("key-{k}")),
                        payload: serde_json::json!({ "n": self.ids.len() }),
                        max_attempts,
                        next_eligible_at: now + Duration::seconds(delay),
                        give_up_at: deadline.map(|d| now + Duration::seconds(d)),
                        dependency: None,
                        enqueue_params: serde_json::json!({}),
                        created_at: now,
                        last_woken_at: None,
                    })
                    .await
                    .map_err(|e| format!("enqueue: {e}"))?;
                if done.created {
                    self.ids.push(done.id);
                    self.tokens.push(Vec::new());
                }
                let op = self.ids.iter().position(|i| *i == done.id);
                ensure!(op.is_some(), "enqueue returned an unknown id {}", done.id);
                Expect::Enqueued {
                    op: op.unwrap_or_default(),
                    created: done.created,
                }
            }
            Action::ClaimById { op, same_kind } => {
                let kind = if same_kind { KIND } else { "model.other" };
                let got = store
                    .operation_claim_by_ids(ClaimByIdsParams {
                        ids: vec![self.ids[op]],
                        kinds: vec![kind.to_owned()],
                        claimant,
                    })
                    .await
                    .map_err(|e| format!("claim by id: {e}"))?;
                Expect::Claimed(self.claimed(got))
            }
            Action::ClaimEligible { limit } => {
                let got = store
                    .operation_claim_eligible(ClaimEligibleParams {
                        kinds: vec![],
                        limit,
                        claimant,
                    })
                    .await
                    .map_err(|e| format!("claim eligible: {e}"))?;
                Expect::Claimed(self.claimed(got))
            }
            Action::Heartbeat { op, token } => {
                let r = store
                    .operation_heartbeat(HeartbeatParams {
                        id: self.ids[op],
                        claim_token: self.token(op, token),
                        lease: Duration::seconds(LEASE_SECS),
                    })
                    .await;
                match r {
                    Ok(_) => Expect::Fenced(true),
                    Err(Error::StaleClaim { .. }) => Expect::Fenced(false),
                    Err(e) => return Err(format!("heartbeat: {e}")),
                }
            }
            Action::Complete { op, token, ending } => {
                let r = store
                    .operation_complete_many(vec![CompleteParams {
                        id: self.ids[op],
                        claim_token: self.token(op, token),
                        transition: self.transition(ending),
                    }])
                    .await
                    .map_err(|e| format!("complete: {e}"))?;
                Expect::Fenced(r == vec![CompleteResult::Applied])
            }
            Action::Advance { secs } => {
                self.harness.advance_secs(secs);
                Expect::Nothing
            }
            Action::Rescue => {
                let r = store
                    .operation_rescue_expired(RescueParams {
                        vanish_limit: VANISH_LIMIT,
                        retry_delay: Duration::seconds(RESCUE_DELAY_SECS),
                        limit: 1000,
                    })
                    .await
                    .map_err(|e| format!("rescue: {e}"))?;
                Expect::Rescued(r.vanished, r.retried, r.dead)
            }
            Action::EndPastDeadline => Expect::Count(
                store
                    .operation_end_past_deadline(1000)
                    .await
                    .map_err(|e| format!("end past deadline: {e}"))?,
            ),
            Action::Cancel { op } => Expect::Count(
                store
                    .operation_cancel(vec![self.ids[op]])
                    .await
                    .map_err(|e| format!("cancel: {e}"))?
                    .len() as u64,
            ),
            Action::Quarantine { op } => Expect::Count(
                store
                    .operation_quarantine(QuarantineParams {
                        filter: self.filter(op),
                        reason: "model".into(),
                        actor: "model".into(),
                        limit: 10,
                    })
                    .await
                    .map_err(|e| format!("quarantine: {e}"))?,
            ),
            Action::ReleaseHeld { op } => Expect::Count(
                store
                    .operation_release(ReleaseParams {
                        filter: self.filter(op),
                        limit: 10,
                    })
                    .await
                    .map_err(|e| format!("release: {e}"))?,
            ),
            Action::Pause { on } => {
                if on {
                    store
                        .control_set(ControlSetParams {
                            scope: ControlScope::Kind,
                            value: KIND.to_owned(),
                            action: ControlAction::Pause,
                            until: None,
                            reason: None,
                            actor: "model".into(),
                        })
                        .await
                        .map_err(|e| format!("pause: {e}"))?;
                } else {
                    store
                        .control_remove(ControlScope::Kind, KIND)
                        .await
                        .map_err(|e| format!("resume: {e}"))?;
                }
                Expect::Nothing
            }
            Action::Resolve { op, applied } => {
                let r = store
                    .operation_reconcile_resolve(ResolveParams {
                        id: self.ids[op],
                        resolution: if applied {
                            Resolution::Applied { remote_id: None }
                        } else {
                            Resolution::NotApplied
                        },
                        actor: "model".into(),
                    })
                    .await;
                match r {
                    Ok(s) => Expect::Resolved(Some(s)),
                    Err(Error::InvalidInput(_)) => Expect::Resolved(None),
                    Err(e) => return Err(format!("resolve: {e}")),
                }
            }
            Action::Redrive {
                op,
                include_cancelled,
                extend,
            } => Expect::Count(
                store
                    .operation_redrive(RedriveParams {
                        filter: self.filter(op),
                        include_cancelled,
                        mode: RedriveMode::InPlace {
                            extend_deadline: extend.map(Duration::seconds),
                        },
                        limit: 10,
                        start_at: now,
                        spacing: Duration::zero(),
                    })
                    .await
                    .map_err(|e| format!("redrive: {e}"))?
                    .len() as u64,
            ),
        };
        ensure!(
            got == expect,
            "the store answered {got:?}, the model {expect:?}"
        );
        let after = self.rows().await;
        self.compare(&after)?;
        self.check_invariants(action, &before, &after)
    }

    /// Every row and history length as the model has them.
    fn compare(&self, rows: &[(Operation, usize)]) -> StepResult {
        ensure!(
            rows.len() == self.model.ops.len(),
            "operation count differs"
        );
        for (i, ((row, history), m)) in rows.iter().zip(&self.model.ops).enumerate() {
            let want = (
                m.status,
                m.attempt,
                m.max_attempts,
                m.next_eligible_at,
                m.give_up_at,
                m.lease_until,
                m.terminal_reason,
                m.last_failure_class,
                m.vanished_streak,
                m.redrive_count,
                m.history,
            );
            let have = (
                row.status,
                row.attempt,
                row.max_attempts,
                row.next_eligible_at,
                row.give_up_at,
                row.lease_until,
                row.terminal_reason,
                row.last_failure_class,
                row.vanished_streak,
                row.redrive_count,
                *history,
            );
            ensure!(
                want == have,
                "operation {i}: the store has (status, attempt, max, eligible, give up, lease, \
                 reason, class, streak, redrives, history) = {have:?}, the model {want:?}"
            );
            let token = self.tokens[i].last().copied();
            if m.status == Status::Running {
                ensure!(
                    row.claim_token == token,
                    "operation {i}: not the newest token"
                );
            }
            ensure!(
                row.terminal_at.is_some() == m.status.is_terminal(),
                "operation {i}: terminal_at {:?} with status {}",
                row.terminal_at,
                m.status
            );
        }
        Ok(())
    }

    /// The invariants that hold whatever the model says.
    fn check_invariants(
        &self,
        action: &Action,
        before: &[(Operation, usize)],
        after: &[(Operation, usize)],
    ) -> StepResult {
        let redrive = matches!(action, Action::Redrive { .. });
        let snooze = matches!(
            action,
            Action::Complete {
                ending: Ending::Snooze(_),
                ..
            }
        );
        for (i, (new, history)) in after.iter().enumerate() {
            let running = new.status == Status::Running;
            ensure!(
                running == (new.claim_token.is_some() && new.lease_until.is_some()),
                "operation {i}: running is {running} with token {:?} and lease {:?}",
                new.claim_token,
                new.lease_until
            );
            let Some((old, old_history)) = before.get(i) else {
                continue;
            };
            ensure!(history >= old_history, "operation {i}: history shrank");
            if old.status.is_terminal() && !redrive {
                ensure!(
                    (old, old_history) == (new, history),
                    "operation {i}: terminal {} changed",
                    old.status
                );
            }
            if old.status != new.status && !redrive {
                ensure!(
                    old.status.can_transition_to(new.status),
                    "operation {i}: {} -> {} is not an edge of the state machine",
                    old.status,
                    new.status
                );
            }
            if new.attempt < old.attempt {
                ensure!(
                    redrive || (snooze && new.attempt + 1 == old.attempt),
                    "operation {i}: attempt went from {} to {}",
                    old.attempt,
                    new.attempt
                );
            }
            let stale = match *action {
                Action::Heartbeat { op, token } | Action::Complete { op, token, .. } => {
                    op == i && !(old.status == Status::Running && token == TokenPick::Current)
                }
                _ => false,
            };
            if stale {
                ensure!(
                    (old, old_history) == (new, history),
                    "operation {i}: a stale token changed it"
                );
            }
        }
        Ok(())
    }
}

/// Expands into one `#[test]` that runs the operation model test ([`model::run`](crate::model::run))
/// on stores from `$setup().await` (a fresh, migrated, empty [`Harness`](crate::Harness) per
/// sequence), [`DEFAULT_CASES`](crate::model::DEFAULT_CASES) sequences unless `cases = N` is
/// given. Failing seeds are kept in `<calling file>.proptest-regressions`.
#[macro_export]
macro_rules! model_tests {
    ($setup:path) => {
        $crate::model_tests!($setup, cases = $crate::model::DEFAULT_CASES);
    };
    ($setup:path, cases = $cases:expr) => {
        #[test]
        fn operation_model_matches_the_store() {
            $crate::model::run(|| ::std::boxed::Box::pin($setup()), $cases, file!());
        }
    };
}
