//! The driver: applies each action to the model and to a real store, and checks that they agree
//! and that the store's invariants hold.

use chrono::Duration;
use oprec_core::maintenance::{EndPastDeadlineParams, WakeDueParams};
use oprec_core::operator::{
    CancelParams, ControlAction, ControlRemoveParams, ControlScope, ControlSetParams,
    OperationFilter, QuarantineParams, RedriveMode, RedriveParams, ReleaseParams, Resolution,
};
use oprec_core::store::{
    ClaimByIdsParams, ClaimEligibleParams, ClaimSuspectParams, CompleteParams, CompleteResult,
    HeartbeatParams,
};
use oprec_core::{
    Claimed, Error, Failure, FailureClass, FullStore, NewOperation, Operation, OperationError,
    OperationId, PayloadMode, Status, TerminalReason, Transition, VanishRule,
};
use uuid::Uuid;

use super::reference::{
    Action, Ending, Expect, KIND, LEASE_SECS, Model, RESCUE_DELAY_SECS, TokenPick, VANISH_LIMIT,
};
use crate::Harness;

/// Drives a real store alongside the model.
pub(super) struct Driver<S> {
    pub(super) harness: Harness<S>,
    pub(super) model: Model,
    /// The store's id of each modelled operation.
    pub(super) ids: Vec<OperationId>,
    /// The tokens issued to each operation, oldest first.
    pub(super) tokens: Vec<Vec<Uuid>>,
}

pub(super) type StepResult = std::result::Result<(), String>;

macro_rules! ensure {
    ($cond:expr, $($fmt:tt)+) => {
        if !$cond {
            return Err(format!($($fmt)+));
        }
    };
}

impl<S: FullStore> Driver<S> {
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

    fn claimed(&mut self, got: Vec<Claimed>) -> Vec<usize> {
        got.into_iter()
            .map(|o| {
                let i = self
                    .ids
                    .iter()
                    .position(|id| *id == o.id)
                    .expect("known id");
                self.tokens[i].push(o.claim_token());
                i
            })
            .collect()
    }

    /// Applies `action` to the model and the store and checks that they agree.
    pub(super) async fn step(&mut self, action: &Action) -> StepResult {
        let before = self.rows().await;
        let expect = self.model.step(action);
        let now = self.model.now;
        let store = &self.harness.store;
        let claimant = self.harness.claimant("model-worker");
        let got = match *action {
            Action::Enqueue {
                key,
                woken,
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
                        payload_mode: PayloadMode::Snapshot,
                        enqueue_params: serde_json::json!({}),
                        created_at: now,
                        last_woken_at: woken.then_some(now),
                        traceparent: None,
                        priority: oprec_core::PRIORITY_DEFAULT,
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
                        above_default_only: false,
                        kinds: vec![],
                        limit,
                        claimant,
                    })
                    .await
                    .map_err(|e| format!("claim eligible: {e}"))?;
                Expect::Claimed(self.claimed(got))
            }
            Action::ClaimSuspect => {
                let got = store
                    .operation_claim_suspect(ClaimSuspectParams {
                        kinds: vec![],
                        claimant,
                    })
                    .await
                    .map_err(|e| format!("claim suspect: {e}"))?;
                Expect::Claimed(self.claimed(got.into_iter().collect()))
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
                let r = crate::rescue_pass(
                    store,
                    &VanishRule {
                        vanish_limit: VANISH_LIMIT,
                        retry_delay: Duration::seconds(RESCUE_DELAY_SECS),
                    },
                )
                .await
                .map_err(|e| format!("rescue: {e}"))?;
                Expect::Rescued(r.vanished, r.retried, r.dead)
            }
            Action::EndPastDeadline => Expect::Count(
                store
                    .operation_end_past_deadline(EndPastDeadlineParams { limit: 1000 })
                    .await
                    .map_err(|e| format!("end past deadline: {e}"))?,
            ),
            Action::Cancel { op } => Expect::Count(
                store
                    .operation_cancel(CancelParams {
                        ids: vec![self.ids[op]],
                    })
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
                        .control_remove(ControlRemoveParams {
                            scope: ControlScope::Kind,
                            value: KIND.into(),
                        })
                        .await
                        .map_err(|e| format!("resume: {e}"))?;
                }
                Expect::Nothing
            }
            Action::Resolve { op, applied } => {
                let resolution = if applied {
                    Resolution::Applied { remote_id: None }
                } else {
                    Resolution::NotApplied
                };
                let r = crate::resolve(store, self.ids[op], resolution, "model").await;
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
                        skip_held_back: false,
                    })
                    .await
                    .map_err(|e| format!("redrive: {e}"))?
                    .len() as u64,
            ),
            Action::RedriveAsNew {
                op,
                include_cancelled,
                deadline,
            } => {
                let done = store
                    .operation_redrive(RedriveParams {
                        filter: self.filter(op),
                        include_cancelled,
                        mode: RedriveMode::AsNew {
                            deadline: deadline.map(Duration::seconds),
                        },
                        limit: 10,
                        start_at: now,
                        spacing: Duration::zero(),
                        skip_held_back: false,
                    })
                    .await
                    .map_err(|e| format!("redrive as new: {e}"))?;
                for r in &done {
                    ensure!(
                        r.from == self.ids[op] && r.to != r.from,
                        "redrive as new of {} returned {r:?}",
                        self.ids[op]
                    );
                    self.ids.push(r.to);
                    self.tokens.push(Vec::new());
                }
                Expect::Count(done.len() as u64)
            }
            Action::WakeDue { rewake_secs, limit } => {
                let woken = store
                    .operation_wake_due(WakeDueParams::all(Duration::seconds(rewake_secs), limit))
                    .await
                    .map_err(|e| format!("wake due: {e}"))?;
                let mut picked = Vec::with_capacity(woken.len());
                for id in woken.into_iter().map(|w| w.id) {
                    let i = self.ids.iter().position(|known| *known == id);
                    ensure!(i.is_some(), "wake due returned an unknown id {id}");
                    picked.push(i.unwrap_or_default());
                }
                picked.sort_unstable();
                Expect::Woken(picked)
            }
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
                (
                    m.last_woken_at,
                    m.redrive_of.map(|o| self.ids[o]),
                    m.suspect,
                ),
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
                (row.last_woken_at, row.redrive_of, row.suspect),
            );
            ensure!(
                want == have,
                "operation {i}: the store has (status, attempt, max, eligible, give up, lease, \
                 reason, class, streak, redrives, history, (woken, redrive of, suspect)) = {have:?}, \
                 the model {want:?}"
            );
            // An original names its copy: the operation that re-drives it as new, if any.
            let copy = self
                .model
                .ops
                .iter()
                .position(|c| c.redrive_of == Some(i))
                .map(|c| self.ids[c]);
            ensure!(
                row.redriven_as == copy,
                "operation {i}: the store has redriven_as {:?}, the model {copy:?}",
                row.redriven_as
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
        let as_new = matches!(action, Action::RedriveAsNew { .. });
        // The ends of a claim that give its attempt back: a snooze, a release.
        let snooze = matches!(
            action,
            Action::Complete {
                ending: Ending::Snooze(_) | Ending::Release(_),
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
                // A re-drive as new marks its original with the copy (and when), nothing more.
                let marked = as_new && old.redriven_as.is_none() && new.redriven_as.is_some();
                let unmarked = Operation {
                    redriven_as: None,
                    updated_at: old.updated_at,
                    ..new.clone()
                };
                let new = if marked { &unmarked } else { new };
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
