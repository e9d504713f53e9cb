//! The retry scenarios oprec's design is tested against, run as deterministic state transitions
//! through a real store on a manual clock:
//!
//! ```text
//! malformed input        -> one attempt, terminal
//! transient outage       -> increasing delay, then success
//! long outage            -> finite attempts, terminal
//! unknown remote result  -> reconciliation, no blind retry
//! terminal operation     -> later queue delivery performs no effect
//! ```
//!
//! plus a deadline that falls before the next rung, and a crash loop. The ladder is the six-rung
//! teaching ladder: attempt 1 at once, then after 60, 300, 1,500, 7,500 and 37,500 seconds, then
//! terminal.

use chrono::{DateTime, Duration, Utc};
use oprec_core::store::{ClaimByIdsParams, CompleteParams};
use oprec_core::{
    AttemptOutcome, ClaimContext, Claimed, Clock, EnqueueOptions, Failure, FailureClass, FullStore,
    Ladder, NewOperation, OperationError, OperationId, Outcome, RetryPolicy, Status,
    TerminalReason, VanishRule,
};
use rand::SeedableRng;
use rand::rngs::StdRng;
use serde_json::{Value, json};

use crate::Harness;

/// The crash-loop bound used by the fixture.
pub const VANISH_LIMIT: u32 = 3;

/// The six-rung teaching ladder, no jitter (the scenarios are deterministic).
pub fn fixture_policy() -> RetryPolicy {
    RetryPolicy::builder()
        .timeout(Duration::seconds(30))
        .max_attempts(6)
        .external_io(Ladder::schedule_secs(&[0, 60, 300, 1500, 7500, 37500]))
        .jitter(oprec_core::Jitter::None)
        .build()
        .expect("fixture policy")
}

/// A provider that is down until `recovers_at` (503s), then accepts valid requests.
struct Provider {
    recovers_at: Option<DateTime<Utc>>,
    timeout_after_write: bool,
}

impl Provider {
    /// What the remote call of a shipment with this payload returns at `now`, classified.
    fn ship(&self, payload: &Value, now: DateTime<Utc>) -> Outcome {
        let Some(code) = payload.get("postal_code").and_then(Value::as_str) else {
            return Failure::permanent(
                OperationError::new("destination postal code is missing")
                    .field("destination postal code"),
            )
            .into();
        };
        if self.recovers_at.is_some_and(|t| now < t) {
            return Failure::transient("provider answered 503 Service Unavailable").into();
        }
        if self.timeout_after_write {
            return Failure::unknown("timed out after the request was written").into();
        }
        Outcome::Succeeded {
            remote_id: Some(format!("shipment-{code}")),
        }
    }
}

/// One delivery of "attempt operation N now": claim it if it is claimable, ask the provider,
/// decide with the policy and write the outcome. `None` when the claim took nothing.
async fn deliver<S: FullStore>(
    h: &Harness<S>,
    id: OperationId,
    provider: &Provider,
) -> Option<Status> {
    let claimed: Vec<Claimed> = h
        .store
        .operation_claim_by_ids(ClaimByIdsParams {
            kinds: vec![],
            ids: vec![id],
            claimant: h.claimant("fixture-worker"),
        })
        .await
        .expect("claim");
    let op = claimed.into_iter().next()?;
    let now = h.clock.now();
    let outcome = provider.ship(&op.payload, now);
    let transition = fixture_policy().transition_for(
        &ClaimContext::from(&op),
        outcome,
        now,
        &mut StdRng::seed_from_u64(0),
    );
    let status = transition.status();
    h.store
        .operation_complete(CompleteParams {
            id,
            claim_token: op.claim_token.expect("claimed rows carry a token"),
            transition,
        })
        .await
        .expect("complete");
    Some(status)
}

/// Delivers wake-ups at each eligible time until the operation leaves `pending`; returns the
/// seconds since the start at which attempts were made.
async fn run_to_rest<S: FullStore>(
    h: &Harness<S>,
    id: OperationId,
    provider: &Provider,
) -> Vec<i64> {
    let start = crate::start_time();
    let mut times = Vec::new();
    for _ in 0..20 {
        let op = h.get(id).await.operation;
        if op.status != Status::Pending {
            break;
        }
        if op.next_eligible_at > h.clock.now() {
            // One second early, a wake-up does nothing.
            h.clock.set(op.next_eligible_at - Duration::seconds(1));
            assert!(
                deliver(h, id, provider).await.is_none(),
                "claimed before its rung"
            );
            h.clock.set(op.next_eligible_at);
        }
        times.push((h.clock.now() - start).num_seconds());
        assert!(
            deliver(h, id, provider).await.is_some(),
            "eligible but not claimed"
        );
    }
    times
}

async fn enqueue_shipment<S: FullStore>(
    h: &Harness<S>,
    payload: Value,
    options: EnqueueOptions,
) -> OperationId {
    let op = NewOperation::new(
        "shipment.create",
        payload,
        &fixture_policy(),
        options,
        h.clock.now(),
    )
    .expect("new operation");
    h.store.operation_insert(op).await.expect("enqueue").id
}

fn healthy() -> Provider {
    Provider {
        recovers_at: None,
        timeout_after_write: false,
    }
}

/// Malformed input: one attempt, dead (permanent), and the error names the field.
pub async fn malformed_input_is_dead_after_one_attempt<S: FullStore>(h: Harness<S>) {
    let id = enqueue_shipment(
        &h,
        json!({"street": "1 Main St"}),
        EnqueueOptions::default(),
    )
    .await;
    let times = run_to_rest(&h, id, &healthy()).await;
    assert_eq!(times, vec![0]);
    let d = h.get(id).await;
    assert_eq!(d.operation.status, Status::Dead);
    assert_eq!(d.operation.terminal_reason, Some(TerminalReason::Permanent));
    assert_eq!(d.operation.attempt, 1);
    assert_eq!(
        d.operation.last_failure_class,
        Some(FailureClass::Permanent)
    );
    let err = d.operation.last_error.expect("last error");
    assert_eq!(err.field.as_deref(), Some("destination postal code"));
    assert!(err.next_action.is_some());
    assert_eq!(d.attempts.len(), 1);
}

/// Transient outage: attempts at 0, 60 and 360 seconds, then success.
pub async fn transient_outage_retries_at_0_60_360_then_succeeds<S: FullStore>(h: Harness<S>) {
    let provider = Provider {
        recovers_at: Some(crate::start_time() + Duration::seconds(200)),
        timeout_after_write: false,
    };
    let id = enqueue_shipment(
        &h,
        json!({"postal_code": "10115"}),
        EnqueueOptions::default(),
    )
    .await;
    let times = run_to_rest(&h, id, &provider).await;
    assert_eq!(times, vec![0, 60, 360]);
    let d = h.get(id).await;
    assert_eq!(d.operation.status, Status::Succeeded);
    assert_eq!(d.operation.remote_id.as_deref(), Some("shipment-10115"));
    let outcomes: Vec<_> = d.attempts.iter().map(|a| a.outcome).collect();
    assert_eq!(
        outcomes,
        vec![
            AttemptOutcome::Error,
            AttemptOutcome::Error,
            AttemptOutcome::Succeeded
        ]
    );
}

/// Long outage: exactly six attempts at the ladder's times, then dead (attempts_exhausted).
pub async fn long_outage_ends_after_six_attempts_at_the_ladder_times<S: FullStore>(h: Harness<S>) {
    let provider = Provider {
        recovers_at: Some(crate::start_time() + Duration::days(30)),
        timeout_after_write: false,
    };
    let id = enqueue_shipment(
        &h,
        json!({"postal_code": "10115"}),
        EnqueueOptions::default(),
    )
    .await;
    let times = run_to_rest(&h, id, &provider).await;
    assert_eq!(times, vec![0, 60, 360, 1860, 9360, 46860]);
    let d = h.get(id).await;
    assert_eq!(d.operation.status, Status::Dead);
    assert_eq!(
        d.operation.terminal_reason,
        Some(TerminalReason::AttemptsExhausted)
    );
    assert_eq!(d.operation.attempt, 6);
    assert_eq!(d.attempts.len(), 6);
    let claimed: Vec<i64> = d
        .attempts
        .iter()
        .map(|a| (a.claimed_at - crate::start_time()).num_seconds())
        .collect();
    assert_eq!(claimed, times, "the history keeps every attempt's time");
    // Nothing is claimable afterwards, however long we wait.
    h.clock.set(crate::start_time() + Duration::days(60));
    assert!(deliver(&h, id, &provider).await.is_none());
}

/// Unknown remote result: reconciling after one attempt, and no further claim succeeds.
pub async fn unknown_remote_result_goes_to_reconciling<S: FullStore>(h: Harness<S>) {
    let provider = Provider {
        recovers_at: None,
        timeout_after_write: true,
    };
    let id = enqueue_shipment(
        &h,
        json!({"postal_code": "10115"}),
        EnqueueOptions::default(),
    )
    .await;
    assert_eq!(run_to_rest(&h, id, &provider).await, vec![0]);
    let d = h.get(id).await;
    assert_eq!(d.operation.status, Status::Reconciling);
    assert_eq!(d.operation.last_failure_class, Some(FailureClass::Unknown));
    assert_eq!(d.attempts[0].outcome, AttemptOutcome::Unknown);
    for secs in [60, 3600, 86_400 * 7] {
        h.clock.set(crate::start_time() + Duration::seconds(secs));
        assert!(
            deliver(&h, id, &healthy()).await.is_none(),
            "no blind retry"
        );
        assert!(h.claim_all("other").await.is_empty());
    }
    assert_eq!(h.get(id).await.operation.attempt, 1);
}

/// Terminal operation: a later delivery changes nothing.
pub async fn terminal_operation_ignores_later_claims<S: FullStore>(h: Harness<S>) {
    let id = enqueue_shipment(
        &h,
        json!({"postal_code": "10115"}),
        EnqueueOptions::default(),
    )
    .await;
    assert_eq!(deliver(&h, id, &healthy()).await, Some(Status::Succeeded));
    let before = h.get(id).await;
    for _ in 0..3 {
        h.advance_secs(60);
        assert!(deliver(&h, id, &healthy()).await.is_none());
    }
    assert!(h.claim_all("other").await.is_empty());
    let after = h.get(id).await;
    assert_eq!(after, before, "a terminal row is never touched by a claim");
}

/// A deadline earlier than the next rung: dead (deadline_passed), no late attempt.
pub async fn deadline_before_the_next_rung_ends_dead<S: FullStore>(h: Harness<S>) {
    let provider = Provider {
        recovers_at: Some(crate::start_time() + Duration::days(1)),
        timeout_after_write: false,
    };
    let deadline = crate::start_time() + Duration::seconds(1000);
    let id = enqueue_shipment(
        &h,
        json!({"postal_code": "10115"}),
        EnqueueOptions {
            deadline: Some(deadline),
            ..Default::default()
        },
    )
    .await;
    // Attempts at 0, 60, 360; the next rung (1,860 s) would be after the deadline (1,000 s).
    assert_eq!(run_to_rest(&h, id, &provider).await, vec![0, 60, 360]);
    let d = h.get(id).await;
    assert_eq!(d.operation.status, Status::Dead);
    assert_eq!(
        d.operation.terminal_reason,
        Some(TerminalReason::DeadlinePassed)
    );
    assert_eq!(d.operation.attempt, 3);
    assert!(d.attempts.iter().all(|a| a.claimed_at <= deadline));
}

/// A crash loop: claims whose leases expire with no outcome end dead (crash_loop) after
/// [`VANISH_LIMIT`] isolated ones in a row (the first, an ordinary claim, only makes the
/// operation a suspect), with each vanished attempt in the history.
pub async fn crash_loop_ends_dead_with_every_vanished_attempt_kept<S: FullStore>(h: Harness<S>) {
    let id = enqueue_shipment(
        &h,
        json!({"postal_code": "10115"}),
        EnqueueOptions::default(),
    )
    .await;
    let rule = VanishRule {
        vanish_limit: VANISH_LIMIT,
        retry_delay: Duration::seconds(60),
    };
    // The first attempt ran as any other (it may have died with neighbours): a suspect; then
    // VANISH_LIMIT isolated attempts in a row vanish too.
    for round in 1..=VANISH_LIMIT + 1 {
        // The worker claims, then dies: no outcome is ever written.
        let claimed = if round == 1 {
            h.claim_all("doomed-worker").await
        } else {
            assert!(h.claim_all("doomed-worker").await.is_empty(), "a suspect");
            h.claim_suspect("doomed-worker").await.into_iter().collect()
        };
        assert_eq!(claimed.len(), 1, "round {round}");
        assert_eq!(claimed[0].attempt, round);
        assert_eq!(claimed[0].isolated, round > 1);
        h.advance_secs(31);
        let r = h.rescue_with(rule).await;
        assert_eq!(r.vanished, 1);
        h.advance_secs(60);
    }
    let d = h.get(id).await;
    assert_eq!(d.operation.status, Status::Dead);
    assert_eq!(d.operation.terminal_reason, Some(TerminalReason::CrashLoop));
    assert_eq!(d.operation.attempt, VANISH_LIMIT + 1);
    assert_eq!(d.attempts.len(), VANISH_LIMIT as usize + 1);
    assert!(
        d.attempts
            .iter()
            .all(|a| a.outcome == AttemptOutcome::Vanished)
    );
    assert!(
        d.operation
            .last_error
            .unwrap()
            .decision
            .unwrap()
            .contains("crash loop")
    );
    h.advance_secs(3600);
    assert!(h.claim_all("w").await.is_empty());
}
