//! The reference model: what each action does to a few operations, written as plainly as
//! DESIGN.md states it, and the strategy that generates sequences of actions.

use chrono::{DateTime, Duration, Utc};
use oprec_core::{FailureClass, Status, TerminalReason};
use proptest::prelude::*;
use proptest_state_machine::ReferenceStateMachine;

use crate::start_time;

/// The kind every modelled operation has.
pub const KIND: &str = "model.op";
/// The most operations one sequence enqueues.
pub(super) const MAX_OPS: usize = 4;
/// The most operations one sequence holds, counting those re-driven as new.
pub(super) const MAX_ROWS: usize = 6;
/// The lease of every claim and heartbeat, in seconds.
pub(super) const LEASE_SECS: i64 = 30;
/// Vanished attempts in a row after which the rescuer ends an operation (crash loop).
pub(super) const VANISH_LIMIT: u32 = 2;
/// How long a rescued operation waits, in seconds.
pub(super) const RESCUE_DELAY_SECS: i64 = 5;

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
        /// Inserted already marked woken, as a client with a broker inserts a due operation
        /// whose wake-up it publishes itself.
        woken: bool,
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
    /// Claim one suspect, to run isolated.
    ClaimSuspect,
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
    /// Re-drive one terminal operation as a new operation linked to it; the old row stays.
    RedriveAsNew {
        /// Which.
        op: usize,
        /// Cancelled operations too.
        include_cancelled: bool,
        /// The new operation's deadline, seconds after now.
        deadline: Option<i64>,
    },
    /// The scheduler's pick: mark due operations woken and return them.
    WakeDue {
        /// How long a wake-up is trusted before the operation is woken again, in seconds.
        rewake_secs: i64,
        /// The most operations.
        limit: u32,
    },
}

/// The model of one operation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelOp {
    pub(super) key: Option<u8>,
    pub(super) status: Status,
    pub(super) attempt: u32,
    pub(super) max_attempts: Option<u32>,
    pub(super) next_eligible_at: DateTime<Utc>,
    pub(super) give_up_at: Option<DateTime<Utc>>,
    pub(super) lease_until: Option<DateTime<Utc>>,
    /// Claim tokens issued so far; the newest is the valid one while running.
    pub(super) claims: usize,
    pub(super) terminal_reason: Option<TerminalReason>,
    pub(super) last_failure_class: Option<FailureClass>,
    pub(super) vanished_streak: u32,
    /// Its last attempt vanished: claimed only alone, by the suspects' claim.
    pub(super) suspect: bool,
    /// The current (or last) claim was a suspect's isolated one.
    pub(super) isolated: bool,
    pub(super) redrive_count: u32,
    /// Rows of attempt history.
    pub(super) history: usize,
    /// When the scheduler (or the enqueuing client) last published a wake-up for it.
    pub(super) last_woken_at: Option<DateTime<Utc>>,
    /// The operation it was re-driven from, as new.
    pub(super) redrive_of: Option<usize>,
}

/// The reference model: the clock, the operations in creation order and the pause.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Model {
    pub(super) now: DateTime<Utc>,
    pub(super) ops: Vec<ModelOp>,
    pub(super) paused: bool,
}

/// What the model predicts an action returns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Expect {
    /// Enqueue: the operation (by index) and whether it is new.
    Enqueued { op: usize, created: bool },
    /// Claims: the operations claimed, by index, in the order returned.
    Claimed(Vec<usize>),
    /// The scheduler's pick: the operations woken, by index, in index order.
    Woken(Vec<usize>),
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

    /// Eligible and claimable by the ordinary claims: not a suspect.
    fn claimable(&self, o: &ModelOp) -> bool {
        self.eligible(o) && !o.suspect
    }

    /// Up to `limit` operations matching `wanted`, by index, in the stores' order: eligible time,
    /// then id (= creation order).
    fn first_eligible(&self, limit: u32, wanted: impl Fn(&ModelOp) -> bool) -> Vec<usize> {
        let mut picked: Vec<usize> = (0..self.ops.len())
            .filter(|&i| wanted(&self.ops[i]))
            .collect();
        picked.sort_by_key(|&i| (self.ops[i].next_eligible_at, i));
        picked.truncate(limit as usize);
        picked
    }

    /// Dead (or cancelled, when asked) and not already re-driven as new.
    fn redrivable(&self, op: usize, include_cancelled: bool) -> bool {
        let s = self.ops[op].status;
        (s == Status::Dead || (include_cancelled && s == Status::Cancelled))
            && !self.ops.iter().any(|o| o.redrive_of == Some(op))
    }

    /// Due for a wake-up: eligible, and never woken, woken before it became eligible (a retry),
    /// or woken longer than `rewake` ago (the wake-up may be lost).
    fn due(&self, o: &ModelOp, rewake: Duration) -> bool {
        self.eligible(o)
            && o.last_woken_at
                .is_none_or(|w| w < o.next_eligible_at || w < self.now - rewake)
    }

    fn claim(&mut self, i: usize, isolated: bool) {
        let now = self.now;
        let o = &mut self.ops[i];
        o.isolated = isolated;
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
    pub(super) fn step(&mut self, action: &Action) -> Expect {
        let now = self.now;
        match *action {
            Action::Enqueue {
                key,
                woken,
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
                    suspect: false,
                    isolated: false,
                    redrive_count: 0,
                    history: 0,
                    last_woken_at: woken.then_some(now),
                    redrive_of: None,
                });
                Expect::Enqueued {
                    op: self.ops.len() - 1,
                    created: true,
                }
            }
            Action::ClaimById { op, same_kind } => {
                if same_kind && self.claimable(&self.ops[op]) {
                    self.claim(op, false);
                    Expect::Claimed(vec![op])
                } else {
                    Expect::Claimed(vec![])
                }
            }
            Action::ClaimEligible { limit } => {
                let picked = self.first_eligible(limit, |o| self.claimable(o));
                for &i in &picked {
                    self.claim(i, false);
                }
                Expect::Claimed(picked)
            }
            Action::ClaimSuspect => {
                let picked = self.first_eligible(1, |o| self.eligible(o) && o.suspect);
                for &i in &picked {
                    self.claim(i, true);
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
                // A release says nothing about the operation: it keeps the suspect flag and the
                // crash-loop counter. Any other outcome clears both.
                if !matches!(ending, Ending::Release(_)) {
                    o.vanished_streak = 0;
                    o.suspect = false;
                }
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
                        o.attempt -= 1;
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
                    // Only an isolated attempt counts toward the crash loop.
                    let streak = if o.isolated { o.vanished_streak + 1 } else { 0 };
                    let reason = if o.isolated && streak >= VANISH_LIMIT {
                        Some(TerminalReason::CrashLoop)
                    } else if o.max_attempts.is_some_and(|m| o.attempt >= m) {
                        Some(TerminalReason::AttemptsExhausted)
                    } else if o.give_up_at.is_some_and(|g| g < retry_at) {
                        Some(TerminalReason::DeadlinePassed)
                    } else {
                        None
                    };
                    o.vanished_streak = streak;
                    o.suspect = reason.is_none();
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
                    // Eligible now, or later if it was waiting for a later time already.
                    o.next_eligible_at = o.next_eligible_at.max(now);
                    o.last_woken_at = None;
                }
                Expect::Count(n.into())
            }
            Action::Pause { on } => {
                // Setting a pause, or lifting one in force, marks the pending operations it
                // names as never woken: the wake-ups sent before are useless.
                if on || self.paused {
                    for o in self.ops.iter_mut().filter(|o| o.status == Status::Pending) {
                        o.last_woken_at = None;
                    }
                }
                self.paused = on;
                Expect::Nothing
            }
            Action::Resolve { op, applied } => {
                let o = &mut self.ops[op];
                if o.status != Status::Reconciling {
                    return Expect::Resolved(None);
                }
                o.next_eligible_at = now;
                o.last_woken_at = None;
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
                let n = self.redrivable(op, include_cancelled);
                let o = &mut self.ops[op];
                if n {
                    Self::end(o, Status::Pending, None);
                    o.attempt = 0;
                    o.next_eligible_at = now;
                    o.vanished_streak = 0;
                    o.suspect = false;
                    o.isolated = false;
                    o.redrive_count += 1;
                    o.last_woken_at = None;
                    o.give_up_at = match extend {
                        Some(s) => Some(now + Duration::seconds(s)),
                        None => o.give_up_at.filter(|g| *g >= now),
                    };
                }
                Expect::Count(n.into())
            }
            Action::RedriveAsNew {
                op,
                include_cancelled,
                deadline,
            } => {
                let n = self.redrivable(op, include_cancelled);
                if n {
                    let old = &self.ops[op];
                    let new = ModelOp {
                        key: None,
                        status: Status::Pending,
                        attempt: 0,
                        max_attempts: old.max_attempts,
                        next_eligible_at: now,
                        give_up_at: deadline.map(|d| now + Duration::seconds(d)),
                        lease_until: None,
                        claims: 0,
                        terminal_reason: None,
                        last_failure_class: None,
                        vanished_streak: 0,
                        suspect: false,
                        isolated: false,
                        redrive_count: old.redrive_count + 1,
                        history: 0,
                        last_woken_at: None,
                        redrive_of: Some(op),
                    };
                    self.ops.push(new);
                }
                Expect::Count(n.into())
            }
            Action::WakeDue { rewake_secs, limit } => {
                let rewake = Duration::seconds(rewake_secs);
                let mut picked = self.first_eligible(limit, |o| self.due(o, rewake));
                for &i in &picked {
                    self.ops[i].last_woken_at = Some(now);
                }
                picked.sort_unstable();
                Expect::Woken(picked)
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
            prop::bool::weighted(0.5),
            prop_oneof![Just(0i64), 1..30i64],
            proptest::option::weighted(0.4, 1..120i64),
            proptest::option::weighted(0.4, 1..4u32),
        )
            .prop_map(
                |(key, woken, delay, deadline, max_attempts)| Action::Enqueue {
                    key,
                    woken,
                    delay,
                    deadline,
                    max_attempts,
                },
            );
        let global = prop_oneof![
            4 => enqueue,
            4 => prop_oneof![Just(1u32), Just(1000u32)]
                .prop_map(|limit| Action::ClaimEligible { limit }),
            4 => prop_oneof![1..10i64, 25..45i64].prop_map(|secs| Action::Advance { secs }),
            2 => Just(Action::Rescue),
            2 => Just(Action::ClaimSuspect),
            1 => Just(Action::EndPastDeadline),
            1 => any::<bool>().prop_map(|on| Action::Pause { on }),
            4 => (prop_oneof![Just(0i64), Just(10i64), Just(300i64)], prop_oneof![Just(1u32), Just(1000u32)])
                .prop_map(|(rewake_secs, limit)| Action::WakeDue { rewake_secs, limit }),
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
        // Which terminal operation, cancelled ones too or not, and a deadline from now.
        let redrive = (
            pick(&|s| s.is_terminal()),
            any::<bool>(),
            proptest::option::of(1..120i64),
        );
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
            2 => redrive.clone()
                .prop_map(|(op, include_cancelled, extend)| Action::Redrive {
                    op,
                    include_cancelled,
                    extend,
                }),
            1 => redrive
                .prop_map(|(op, include_cancelled, deadline)| Action::RedriveAsNew {
                    op,
                    include_cancelled,
                    deadline,
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
            Action::RedriveAsNew { op, .. } => op < n && n < MAX_ROWS,
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
