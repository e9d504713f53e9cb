//! The Store conformance cases: what every backend must do, row for row.

use chrono::Duration;
use oprec_core::maintenance::{
    EndPastDeadlineParams, LeaseExpiredListParams, RescueManyParams, WakeDueParams,
};
use oprec_core::operator::{
    CancelParams, ControlAction, ControlRemoveParams, ControlScope, ControlSetParams,
};
use oprec_core::store::{
    ClaimByIdsParams, ClaimEligibleParams, ClaimGiveBackParams, ClaimSuspectParams, CompleteParams,
    CompleteResult, HeartbeatManyParams, HeartbeatParams, HeldClaim, ListParams, MarkWokenParams,
    OperationGetParams, StepsGetParams, WorkExistsParams,
};
use oprec_core::{
    AttemptOutcome, ClaimContext, Clock, Ending, EnqueueOptions, Error, Failure, FailureClass,
    FullStore, NewOperation, OperationError, OperationId, Outcome, PayloadMode, RetryPolicy,
    Status, TerminalReason, Transition, VanishRule,
};
use rand::SeedableRng;
use rand::rngs::StdRng;
use serde_json::json;

use crate::Harness;

/// A local-only policy with six attempts and no deadline.
pub fn plain_policy() -> RetryPolicy {
    RetryPolicy::builder()
        .timeout(Duration::seconds(30))
        .max_attempts(6)
        .local_only()
        .jitter(oprec_core::Jitter::None)
        .build()
        .expect("policy")
}

/// Enqueues one operation of `kind` with `options`, at the harness's time.
pub async fn enqueue<S: FullStore>(
    h: &Harness<S>,
    kind: &str,
    options: EnqueueOptions,
) -> OperationId {
    let op = NewOperation::new(
        kind,
        json!({"n": 1}),
        &plain_policy(),
        options,
        h.clock.now(),
    )
    .expect("new operation");
    h.store.operation_insert(op).await.expect("enqueue").id
}

fn rescue(vanish_limit: u32) -> VanishRule {
    VanishRule {
        vanish_limit,
        retry_delay: Duration::zero(),
    }
}

/// Every column written at enqueue reads back the same.
pub async fn enqueue_then_get_round_trips<S: FullStore>(h: Harness<S>) {
    let now = h.clock.now();
    let deadline = now + Duration::hours(48);
    let payload = json!({"to": "Zoë", "amount_cents": 1250, "nested": {"list": [1, 2, 3]}});
    let op = NewOperation::new(
        "email.send",
        payload.clone(),
        &plain_policy(),
        EnqueueOptions {
            idempotency_key: Some("order-42".into()),
            delay: Some(Duration::seconds(90)),
            deadline: Some(deadline),
            max_attempts: Some(4),
            dependency: Some("smtp".into()),
            priority: Some(-1),
            traceparent: Some(
                "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
                    .parse()
                    .unwrap(),
            ),
        },
        now,
    )
    .unwrap();
    let op = NewOperation {
        payload_mode: PayloadMode::Reference,
        ..op
    };
    let id = op.id;
    let e = h.store.operation_insert(op).await.unwrap();
    assert_eq!(e.id, id);
    assert!(e.created);

    let d = h.get(id).await;
    let o = &d.operation;
    assert_eq!(o.kind, "email.send");
    assert_eq!(o.payload, payload);
    assert_eq!(o.status, Status::Pending);
    assert_eq!(o.attempt, 0);
    assert_eq!(o.max_attempts, Some(4));
    assert_eq!(o.idempotency_key.as_deref(), Some("order-42"));
    assert_eq!(o.next_eligible_at, now + Duration::seconds(90));
    assert_eq!(o.give_up_at, Some(deadline));
    assert_eq!(o.dependency.as_deref(), Some("smtp"));
    assert_eq!(
        o.traceparent.as_ref().map(|t| t.as_str()),
        Some("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
    );
    assert_eq!(o.payload_mode, Some(PayloadMode::Reference));
    assert_eq!(o.created_at, now);
    assert_eq!(o.enqueue_params["idempotency_key"], "order-42");
    assert_eq!(o.enqueue_params["delay"], 90.0);
    assert_eq!(o.enqueue_params["priority"], -1);
    assert!(o.claim_token.is_none() && o.lease_until.is_none() && o.terminal_at.is_none());
    assert!(d.attempts.is_empty());
    assert!(
        h.store
            .operation_get(OperationGetParams {
                id: OperationId::new()
            })
            .await
            .unwrap()
            .is_none()
    );
}

/// The same key for the same kind returns the first operation, within a batch and across calls;
/// another kind may use the same key.
pub async fn idempotency_key_returns_the_existing_operation<S: FullStore>(h: Harness<S>) {
    let now = h.clock.now();
    let mk = |kind: &str, key: Option<&str>| {
        NewOperation::new(
            kind,
            json!({}),
            &plain_policy(),
            EnqueueOptions {
                idempotency_key: key.map(str::to_owned),
                ..Default::default()
            },
            now,
        )
        .unwrap()
    };
    let first = h.store.operation_insert(mk("a", Some("k1"))).await.unwrap();
    assert!(first.created);
    let batch = vec![
        mk("a", Some("k1")),
        mk("a", Some("k2")),
        mk("a", Some("k2")),
        mk("b", Some("k1")),
        mk("a", None),
        mk("a", None),
    ];
    let res = h.store.operation_insert_many(batch).await.unwrap();
    assert_eq!(res.len(), 6);
    assert_eq!(res[0].id, first.id);
    assert!(!res[0].created);
    assert!(res[1].created);
    assert_eq!(res[2].id, res[1].id);
    assert!(!res[2].created);
    assert!(res[3].created && res[3].id != first.id);
    assert!(res[4].created && res[5].created && res[4].id != res[5].id);
    let total: u64 = h
        .store
        .operation_count()
        .await
        .unwrap()
        .iter()
        .map(|r| r.count)
        .sum();
    assert_eq!(total, 5);
}

/// A claim moves pending → running, counts the attempt, and gives a token and a lease.
pub async fn claim_counts_the_attempt_and_sets_a_lease<S: FullStore>(h: Harness<S>) {
    let id = enqueue(&h, "k", EnqueueOptions::default()).await;
    let claimed = h.claim_all("w1").await;
    assert_eq!(claimed.len(), 1);
    let c = &claimed[0];
    assert_eq!(c.id, id);
    assert_eq!(c.status, Status::Running);
    assert_eq!(c.attempt, 1);
    assert!(c.claim_token.is_some());
    assert_eq!(c.lease_until, Some(h.clock.now() + Duration::seconds(30)));
    assert_eq!(c.claimed_at, Some(h.clock.now()));
    assert_eq!(c.worker_id.as_deref(), Some("w1"));
    assert_eq!(c.code_version.as_deref(), Some("test-1"));
    // Nothing left to claim.
    assert!(h.claim_all("w2").await.is_empty());
    let stored = h.get(id).await.operation;
    assert_eq!(stored.claim_token, c.claim_token);
    assert_eq!(stored.attempt, 1);
}

/// An operation is not claimable before `next_eligible_at`, and is at that instant.
pub async fn claim_waits_for_next_eligible_at<S: FullStore>(h: Harness<S>) {
    let id = enqueue(
        &h,
        "k",
        EnqueueOptions {
            delay: Some(Duration::seconds(60)),
            ..Default::default()
        },
    )
    .await;
    h.advance_secs(59);
    assert!(h.claim_all("w").await.is_empty());
    let by_id = h
        .store
        .operation_claim_by_ids(ClaimByIdsParams {
            kinds: vec![],
            ids: vec![id],
            claimant: h.claimant("w"),
        })
        .await
        .unwrap();
    assert!(
        by_id.is_empty(),
        "a wake-up before eligibility claims nothing"
    );
    h.advance_secs(1);
    assert_eq!(h.claim_all("w").await.len(), 1);
}

/// Claim by id takes pending eligible operations and ignores running, terminal and unknown ids.
pub async fn claim_by_ids_takes_only_pending_eligible_operations<S: FullStore>(h: Harness<S>) {
    let a = enqueue(&h, "k", EnqueueOptions::default()).await;
    let b = enqueue(&h, "k", EnqueueOptions::default()).await;
    let c = enqueue(&h, "k", EnqueueOptions::default()).await;
    let by_ids = |ids: Vec<OperationId>| {
        h.store.operation_claim_by_ids(ClaimByIdsParams {
            kinds: vec![],
            ids,
            claimant: h.claimant("w"),
        })
    };
    // b becomes running, c becomes cancelled (terminal).
    assert_eq!(by_ids(vec![b]).await.unwrap().len(), 1);
    assert_eq!(
        h.store
            .operation_cancel(CancelParams { ids: vec![c] })
            .await
            .unwrap(),
        vec![c]
    );
    let got = by_ids(vec![a, b, c, OperationId::new(), a]).await.unwrap();
    assert_eq!(got.iter().map(|o| o.id).collect::<Vec<_>>(), vec![a]);
    assert_eq!(got[0].attempt, 1, "a repeated id is claimed once");
    assert_eq!(h.get(b).await.operation.attempt, 1);
    assert_eq!(h.get(c).await.operation.status, Status::Cancelled);
    assert!(by_ids(vec![]).await.unwrap().is_empty());
}

/// Claim eligible honours the kinds filter and the limit, oldest eligible first.
pub async fn claim_eligible_honours_kinds_limit_and_order<S: FullStore>(h: Harness<S>) {
    let later = enqueue(
        &h,
        "a",
        EnqueueOptions {
            delay: Some(Duration::seconds(5)),
            ..Default::default()
        },
    )
    .await;
    let sooner = enqueue(&h, "a", EnqueueOptions::default()).await;
    let other = enqueue(&h, "b", EnqueueOptions::default()).await;
    h.advance_secs(10);
    let claim = |kinds: Vec<&str>, limit| {
        h.store.operation_claim_eligible(ClaimEligibleParams {
            above_default_only: false,
            kinds: kinds.into_iter().map(str::to_owned).collect(),
            limit,
            claimant: h.claimant("w"),
        })
    };
    assert!(claim(vec!["a"], 0).await.unwrap().is_empty());
    let first = claim(vec!["a"], 1).await.unwrap();
    assert_eq!(first.iter().map(|o| o.id).collect::<Vec<_>>(), vec![sooner]);
    let rest = claim(vec!["a", "c"], 10).await.unwrap();
    assert_eq!(rest.iter().map(|o| o.id).collect::<Vec<_>>(), vec![later]);
    let any = claim(vec![], 10).await.unwrap();
    assert_eq!(any.iter().map(|o| o.id).collect::<Vec<_>>(), vec![other]);
}

/// Among eligible operations the higher priority is claimed first, oldest eligible first within
/// a level; a not-yet-eligible high priority waits; an operation eligible for longer than
/// [`PRIORITY_AGING`](oprec_core::PRIORITY_AGING) is claimed before every priority (the
/// starvation guard), oldest eligible first.
pub async fn claim_takes_higher_priorities_first_and_aged_operations_before_all<S: FullStore>(
    h: Harness<S>,
) {
    let with = |priority: i16| EnqueueOptions {
        priority: Some(priority),
        ..Default::default()
    };
    let low = enqueue(&h, "k", with(-2)).await;
    h.advance_secs(1);
    let normal = enqueue(&h, "k", EnqueueOptions::default()).await;
    h.advance_secs(1);
    let normal_later = enqueue(&h, "k", with(0)).await;
    let high = enqueue(&h, "k", with(2)).await;
    let high_delayed = enqueue(
        &h,
        "k",
        EnqueueOptions {
            delay: Some(Duration::seconds(100)),
            ..with(2)
        },
    )
    .await;
    let one = || async {
        let got = h
            .store
            .operation_claim_eligible(ClaimEligibleParams {
                above_default_only: false,
                kinds: vec![],
                limit: 1,
                claimant: h.claimant("w"),
            })
            .await
            .unwrap();
        got.into_iter().map(|c| c.id).collect::<Vec<_>>()
    };
    h.advance_secs(10);
    assert_eq!(one().await, vec![high]);
    assert_eq!(one().await, vec![normal]);
    assert_eq!(one().await, vec![normal_later]);
    assert_eq!(one().await, vec![low]);
    assert!(
        one().await.is_empty(),
        "the delayed one is not eligible yet"
    );
    h.advance_secs(100);
    assert_eq!(one().await, vec![high_delayed]);

    // Sustained high-priority load: the low-priority operation waits only until it has aged.
    let starved = enqueue(&h, "k", with(-2)).await;
    h.advance_secs(10);
    let early_high = enqueue(&h, "k", with(2)).await;
    h.advance_secs(1);
    let next_high = enqueue(&h, "k", with(2)).await;
    assert_eq!(one().await, vec![early_high]);
    h.advance_secs(oprec_core::PRIORITY_AGING.num_seconds() + 1);
    let fresh_high = enqueue(&h, "k", with(2)).await;
    // Both starved and next_high have aged: oldest eligible first, whatever the priority.
    assert_eq!(one().await, vec![starved]);
    assert_eq!(one().await, vec![next_high]);
    assert_eq!(one().await, vec![fresh_high]);

    // A batch fills from the aged, then from each level in turn.
    let a = enqueue(&h, "k", with(-1)).await;
    h.advance_secs(oprec_core::PRIORITY_AGING.num_seconds() + 1);
    let b = enqueue(&h, "k", with(-1)).await;
    let c = enqueue(&h, "k", with(1)).await;
    let d = enqueue(&h, "k", EnqueueOptions::default()).await;
    h.advance_secs(1);
    let batch = h
        .store
        .operation_claim_eligible(ClaimEligibleParams {
            above_default_only: false,
            kinds: vec![],
            limit: 3,
            claimant: h.claimant("w"),
        })
        .await
        .unwrap();
    let mut got: Vec<OperationId> = batch.iter().map(|c| c.id).collect();
    got.sort();
    let mut want = vec![a, c, d];
    want.sort();
    assert_eq!(
        got, want,
        "the aged one, then priority 1, then 0; {b} waits"
    );
    assert_eq!(one().await, vec![b]);
}

/// The claim a worker with a broker backlog makes ahead of its wake-ups takes only the aged
/// operations and those above the default priority, in the same order as every claim; default
/// and lower priorities stay for their wake-ups.
pub async fn claim_ahead_of_wakeups_takes_aged_then_above_default_only<S: FullStore>(
    h: Harness<S>,
) {
    let with = |priority: i16| EnqueueOptions {
        priority: Some(priority),
        ..Default::default()
    };
    let aged_low = enqueue(&h, "k", with(-2)).await;
    h.advance_secs(oprec_core::PRIORITY_AGING.num_seconds() + 1);
    let low = enqueue(&h, "k", with(-1)).await;
    let normal = enqueue(&h, "k", EnqueueOptions::default()).await;
    let one = enqueue(&h, "k", with(1)).await;
    let two = enqueue(&h, "k", with(2)).await;
    let other_kind = enqueue(&h, "other", with(2)).await;
    h.advance_secs(1);
    let ahead = |limit| {
        h.store.operation_claim_eligible(ClaimEligibleParams {
            above_default_only: true,
            kinds: vec!["k".to_owned()],
            limit,
            claimant: h.claimant("w"),
        })
    };
    let ids = |c: Vec<oprec_core::Claimed>| c.into_iter().map(|c| c.id).collect::<Vec<_>>();
    assert_eq!(
        ids(ahead(1).await.unwrap()),
        vec![aged_low],
        "the aged one first"
    );
    assert_eq!(
        ids(ahead(1).await.unwrap()),
        vec![two],
        "then the highest level"
    );
    let rest = ids(ahead(10).await.unwrap());
    assert_eq!(
        rest,
        vec![one],
        "then priority 1, and nothing at or below the default"
    );
    for id in [low, normal, other_kind] {
        assert_eq!(
            h.get(id).await.operation.status,
            Status::Pending,
            "{id} waits"
        );
    }
    let all = h
        .store
        .operation_claim_eligible(ClaimEligibleParams {
            above_default_only: false,
            kinds: vec!["k".to_owned()],
            limit: 10,
            claimant: h.claimant("w"),
        })
        .await
        .unwrap();
    let mut all = ids(all);
    all.sort();
    let mut waited = vec![low, normal];
    waited.sort();
    assert_eq!(
        all, waited,
        "the default and lower levels stayed for the full claim"
    );
}

/// No claim is made after `give_up_at`.
pub async fn claim_skips_operations_past_their_deadline<S: FullStore>(h: Harness<S>) {
    let deadline = h.clock.now() + Duration::seconds(10);
    let id = enqueue(
        &h,
        "k",
        EnqueueOptions {
            delay: Some(Duration::seconds(20)),
            deadline: Some(deadline),
            ..Default::default()
        },
    )
    .await;
    h.advance_secs(20);
    assert!(h.claim_all("w").await.is_empty());
    assert_eq!(h.get(id).await.operation.status, Status::Pending);
}

/// A heartbeat extends the lease; with a stale token it changes nothing and says so.
pub async fn heartbeat_extends_the_lease_and_is_fenced<S: FullStore>(h: Harness<S>) {
    enqueue(&h, "k", EnqueueOptions::default()).await;
    let c = h.claim_all("w").await.remove(0);
    h.advance_secs(20);
    let lease = h
        .store
        .operation_heartbeat(HeartbeatParams {
            id: c.id,
            claim_token: c.claim_token.unwrap(),
            lease: Duration::seconds(30),
        })
        .await
        .unwrap();
    assert_eq!(lease, h.clock.now() + Duration::seconds(30));
    assert_eq!(h.get(c.id).await.operation.lease_until, Some(lease));
    let stale = h
        .store
        .operation_heartbeat(HeartbeatParams {
            id: c.id,
            claim_token: uuid::Uuid::now_v7(),
            lease: Duration::seconds(300),
        })
        .await;
    assert!(matches!(stale, Err(Error::StaleClaim { id }) if id == c.id));
    assert_eq!(h.get(c.id).await.operation.lease_until, Some(lease));
}

/// One heartbeat extends the lease of every claim still held; a claim that ended, or a wrong
/// token, is left out and unchanged.
pub async fn heartbeat_many_extends_every_held_claim<S: FullStore>(h: Harness<S>) {
    for _ in 0..3 {
        enqueue(&h, "k", EnqueueOptions::default()).await;
    }
    let claims = h.claim_all("w").await;
    assert_eq!(claims.len(), 3);
    let (a, b, c) = (&claims[0], &claims[1], &claims[2]);
    h.store
        .operation_complete(CompleteParams {
            id: c.id,
            claim_token: c.claim_token(),
            transition: Transition::succeeded(None),
        })
        .await
        .unwrap();
    h.advance_secs(20);
    let wrong = HeldClaim {
        id: b.id,
        claim_token: uuid::Uuid::now_v7(),
    };
    let mut extended = h
        .store
        .operation_heartbeat_many(HeartbeatManyParams {
            claims: vec![a.into(), wrong, c.into(), b.into()],
            lease: Duration::seconds(30),
        })
        .await
        .unwrap();
    extended.sort();
    let mut held = vec![a.id, b.id];
    held.sort();
    assert_eq!(extended, held);
    let lease = h.clock.now() + Duration::seconds(30);
    assert_eq!(h.get(a.id).await.operation.lease_until, Some(lease));
    assert_eq!(h.get(b.id).await.operation.lease_until, Some(lease));
    assert_eq!(h.get(c.id).await.operation.lease_until, None);
    assert_eq!(h.get(c.id).await.operation.status, Status::Succeeded);
    // Extended leases outlive the original ones: nothing for the rescuer.
    h.advance_secs(15);
    assert_eq!(h.rescue(3).await.vanished, 0);
}

/// An unstarted claim given back is pending again at once with its attempt refunded, its claim
/// cleared, marked never woken, and no attempt row; a stale token gives nothing back.
pub async fn give_back_refunds_the_attempt_and_leaves_no_history<S: FullStore>(h: Harness<S>) {
    // `retried` has one real attempt behind it; `fresh` none.
    let retried = enqueue(&h, "k", EnqueueOptions::default()).await;
    let first = h.claim_all("w").await.remove(0);
    h.store
        .operation_complete(CompleteParams {
            id: retried,
            claim_token: first.claim_token(),
            transition: Transition::retry(h.clock.now(), Failure::transient("503")),
        })
        .await
        .unwrap();
    let fresh = enqueue(&h, "k", EnqueueOptions::default()).await;
    h.store
        .operation_mark_woken(MarkWokenParams {
            ids: vec![fresh, retried],
        })
        .await
        .unwrap();
    let claims = h.claim_all("w").await;
    assert_eq!(claims.len(), 2);
    let stale = HeldClaim {
        id: fresh,
        claim_token: uuid::Uuid::now_v7(),
    };
    let mut held: Vec<HeldClaim> = claims.iter().map(HeldClaim::from).collect();
    held.push(stale);
    h.advance_secs(1);
    let mut given = h
        .store
        .operation_claim_give_back(ClaimGiveBackParams {
            claims: held.clone(),
        })
        .await
        .unwrap();
    given.sort();
    let mut both = vec![fresh, retried];
    both.sort();
    assert_eq!(given, both);
    for (id, attempt, history) in [(fresh, 0, 0), (retried, 1, 1)] {
        let d = h.get(id).await;
        assert_eq!(d.operation.status, Status::Pending);
        assert_eq!(d.operation.attempt, attempt);
        assert_eq!(d.operation.claim_token, None);
        assert_eq!(d.operation.lease_until, None);
        assert_eq!(d.operation.last_woken_at, None);
        assert_eq!(d.operation.updated_at, h.clock.now());
        assert_eq!(d.attempts.len(), history);
    }
    // The same claims again are stale: nothing more is refunded.
    let again = h
        .store
        .operation_claim_give_back(ClaimGiveBackParams { claims: held })
        .await
        .unwrap();
    assert!(again.is_empty());
    assert_eq!(h.get(fresh).await.operation.attempt, 0);
    // Claimable at once, counting the same attempts as before.
    let mut next: Vec<(OperationId, u32)> = h
        .claim_all("w2")
        .await
        .iter()
        .map(|c| (c.id, c.attempt))
        .collect();
    next.sort();
    let mut expected = vec![(fresh, 1), (retried, 2)];
    expected.sort();
    assert_eq!(next, expected);
}

/// A worker whose lease was taken over cannot overwrite the newer result.
pub async fn late_completion_with_an_old_token_changes_nothing<S: FullStore>(h: Harness<S>) {
    let id = enqueue(&h, "k", EnqueueOptions::default()).await;
    let old = h.claim_all("zombie").await.remove(0);
    h.advance_secs(31);
    let r = h.rescue(3).await;
    assert_eq!(r.vanished, 1);
    assert!(
        h.claim_all("healthy").await.is_empty(),
        "a suspect: claimed only alone"
    );
    let new = h.claim_suspect("healthy").await.expect("the suspect");
    assert_eq!(new.attempt, 2);
    h.store
        .operation_complete(CompleteParams {
            id,
            claim_token: new.claim_token.unwrap(),
            transition: Transition::succeeded(Some("remote-new".into())),
        })
        .await
        .unwrap();
    let late = h
        .store
        .operation_complete(CompleteParams {
            id,
            claim_token: old.claim_token.unwrap(),
            transition: Transition::dead(
                TerminalReason::Permanent,
                Some(Failure::permanent(OperationError::new("late"))),
            ),
        })
        .await;
    assert!(matches!(late, Err(Error::StaleClaim { .. })));
    let d = h.get(id).await;
    assert_eq!(d.operation.status, Status::Succeeded);
    assert_eq!(d.operation.remote_id.as_deref(), Some("remote-new"));
    let outcomes: Vec<_> = d.attempts.iter().map(|a| a.outcome).collect();
    assert_eq!(
        outcomes,
        vec![AttemptOutcome::Vanished, AttemptOutcome::Succeeded]
    );
    // The refused completion is in the history of the attempt it belonged to, the first.
    assert_eq!(d.attempts[0].stale_outcome, Some(AttemptOutcome::Error));
    assert_eq!(d.attempts[0].stale_at, Some(h.clock.now()));
    assert_eq!(d.attempts[1].stale_outcome, None);
    assert!(!d.attempts[0].isolated && d.attempts[1].isolated);
}

/// A batch of completions reports applied and stale per item, in order.
pub async fn complete_many_reports_each_result_in_order<S: FullStore>(h: Harness<S>) {
    for _ in 0..3 {
        enqueue(&h, "k", EnqueueOptions::default()).await;
    }
    let claimed = h.claim_all("w").await;
    assert_eq!(claimed.len(), 3);
    let mut params: Vec<CompleteParams> = claimed
        .iter()
        .map(|c| CompleteParams {
            id: c.id,
            claim_token: c.claim_token.unwrap(),
            transition: Transition::succeeded(None),
        })
        .collect();
    params[1].claim_token = uuid::Uuid::now_v7();
    let res = h.store.operation_complete_many(params).await.unwrap();
    assert_eq!(
        res,
        vec![
            CompleteResult::Applied,
            CompleteResult::Stale,
            CompleteResult::Applied
        ]
    );
    assert_eq!(h.get(claimed[1].id).await.operation.status, Status::Running);
    assert!(
        h.store
            .operation_complete_many(vec![])
            .await
            .unwrap()
            .is_empty()
    );
}

/// Backpressure gives the attempt back; the history still shows the claim.
pub async fn snooze_refunds_the_attempt<S: FullStore>(h: Harness<S>) {
    let id = enqueue(&h, "k", EnqueueOptions::default()).await;
    let c = h.claim_all("w").await.remove(0);
    let until = h.clock.now() + Duration::seconds(5);
    h.store
        .operation_complete(CompleteParams {
            id,
            claim_token: c.claim_token.unwrap(),
            transition: Transition::snooze(until, Failure::backpressure("pool exhausted")),
        })
        .await
        .unwrap();
    let d = h.get(id).await;
    assert_eq!(d.operation.status, Status::Pending);
    assert_eq!(d.operation.attempt, 0);
    assert_eq!(d.operation.next_eligible_at, until);
    assert_eq!(d.attempts.len(), 1);
    assert_eq!(d.attempts[0].attempt, 1);
    assert_eq!(d.attempts[0].outcome, AttemptOutcome::Snoozed);
    h.advance_secs(5);
    assert_eq!(h.claim_all("w").await[0].attempt, 1);
}

/// Backpressure snoozes decided by the policy and applied through the store count on the row
/// (`snoozes`) and refund their attempts while the policy's snooze budget lasts (2 here, instead
/// of [`oprec_core::DEFAULT_SNOOZE_BUDGET`]); the claim reads the count back, so the next
/// backpressure, the budget spent, climbs the ordinary ladder: the attempt counts, the attempt's
/// outcome is an error, and the operation waits for the ladder's rungs (60 s, then 300 s).
pub async fn snoozes_past_the_budget_climb_the_ladder<S: FullStore>(h: Harness<S>) {
    let policy = RetryPolicy::builder()
        .timeout(Duration::seconds(30))
        .max_attempts(6)
        .local_only()
        .ladder(oprec_core::Ladder::schedule_secs(&[0, 60, 300, 1500]))
        .snooze_budget(2)
        .jitter(oprec_core::Jitter::None)
        .build()
        .expect("policy");
    let rng = &mut StdRng::seed_from_u64(0);
    let id = enqueue(&h, "k", EnqueueOptions::default()).await;
    // Claims the operation, checks the attempt and snoozes the claim carries, and completes it
    // with the policy's decision for a backpressure failure; the moment of the decision.
    async fn pressed<S: FullStore>(
        h: &Harness<S>,
        policy: &RetryPolicy,
        rng: &mut StdRng,
        attempt: u32,
        snoozes: u32,
    ) -> chrono::DateTime<chrono::Utc> {
        let claims = h.claim_all("w").await;
        assert_eq!(claims.len(), 1, "claimable for attempt {attempt}");
        let c = &claims[0];
        assert_eq!((c.attempt, c.snoozes), (attempt, snoozes));
        let now = h.clock.now();
        let transition = policy.transition_for(
            &ClaimContext::from(c),
            Outcome::Failed(Failure::backpressure("pool exhausted")),
            now,
            rng,
        );
        h.store
            .operation_complete(CompleteParams {
                id: c.id,
                claim_token: c.claim_token.unwrap(),
                transition,
            })
            .await
            .expect("applied");
        now
    }
    for snoozes in 1..=2 {
        let at = pressed(&h, &policy, rng, 1, snoozes - 1).await;
        let d = h.get(id).await;
        assert_eq!(d.operation.status, Status::Pending);
        assert_eq!(d.operation.snoozes, snoozes, "counted");
        assert_eq!(d.operation.attempt, 0, "refunded");
        assert_eq!(
            d.operation.next_eligible_at,
            at + policy.backpressure_snooze()
        );
        assert_eq!(d.attempts.last().unwrap().outcome, AttemptOutcome::Snoozed);
        h.clock.advance(policy.backpressure_snooze());
    }
    // The budget is spent: the attempt counts and the first rung of the ladder applies.
    let at = pressed(&h, &policy, rng, 1, 2).await;
    let d = h.get(id).await;
    assert_eq!(d.operation.status, Status::Pending);
    assert_eq!((d.operation.snoozes, d.operation.attempt), (2, 1));
    assert_eq!(d.operation.next_eligible_at, at + Duration::seconds(60));
    assert_eq!(
        d.operation.last_failure_class,
        Some(FailureClass::Backpressure)
    );
    let decision = d.operation.last_error.and_then(|e| e.decision);
    assert!(
        decision
            .as_deref()
            .is_some_and(|t| t.contains("snooze budget of 2 spent")),
        "{decision:?}"
    );
    assert_eq!(d.attempts.len(), 3);
    assert_eq!(d.attempts[2].outcome, AttemptOutcome::Error);
    h.advance_secs(59);
    assert!(h.claim_all("w").await.is_empty(), "waits for the rung");
    h.advance_secs(1);
    // And the next rung after that.
    let at = pressed(&h, &policy, rng, 2, 2).await;
    let d = h.get(id).await;
    assert_eq!((d.operation.snoozes, d.operation.attempt), (2, 2));
    assert_eq!(d.operation.next_eligible_at, at + Duration::seconds(300));
    assert_eq!(d.attempts[3].outcome, AttemptOutcome::Error);
}

/// Every transition constructor lands in its status with its history row.
pub async fn each_transition_sets_status_and_history<S: FullStore>(h: Harness<S>) {
    let now = h.clock.now();
    let err = || OperationError::new("boom").field("f").next_action("look");
    let cases = vec![
        (
            Transition::succeeded(Some("r-1".into())),
            Status::Succeeded,
            AttemptOutcome::Succeeded,
        ),
        (
            Transition::retry(now + Duration::seconds(60), Failure::transient("503")),
            Status::Pending,
            AttemptOutcome::Error,
        ),
        (
            Transition::dead(TerminalReason::Permanent, Some(Failure::permanent(err()))),
            Status::Dead,
            AttemptOutcome::Error,
        ),
        (
            Transition::hold(Failure::configuration("401")),
            Status::Held,
            AttemptOutcome::Error,
        ),
        (
            Transition::reconcile(Failure::unknown("timeout after write")),
            Status::Reconciling,
            AttemptOutcome::Unknown,
        ),
        (
            Transition::release(now),
            Status::Pending,
            AttemptOutcome::Released,
        ),
        (
            Transition::cancel_obsolete(),
            Status::Cancelled,
            AttemptOutcome::Rejected,
        ),
    ];
    for (t, status, outcome) in cases {
        let id = enqueue(&h, "k", EnqueueOptions::default()).await;
        let c = h
            .store
            .operation_claim_by_ids(ClaimByIdsParams {
                kinds: vec![],
                ids: vec![id],
                claimant: h.claimant("w"),
            })
            .await
            .unwrap()
            .remove(0);
        h.store
            .operation_complete(CompleteParams {
                id,
                claim_token: c.claim_token.unwrap(),
                transition: t.clone(),
            })
            .await
            .unwrap();
        let d = h.get(id).await;
        let o = &d.operation;
        assert_eq!(o.status, status, "{t:?}");
        assert_eq!(o.attempt, if t.refunds_attempt() { 0 } else { 1 }, "{t:?}");
        assert!(o.claim_token.is_none() && o.lease_until.is_none());
        assert_eq!(o.terminal_at.is_some(), status.is_terminal(), "{t:?}");
        assert_eq!(o.terminal_reason, t.terminal_reason());
        assert_eq!(o.last_failure_class, t.failure().map(|(c, _)| c));
        assert_eq!(o.last_error.as_ref(), t.failure().map(|(_, e)| e));
        if let Some(at) = t.next_eligible_at() {
            assert_eq!(o.next_eligible_at, at);
        }
        assert_eq!(o.remote_id.as_deref(), t.remote_id());
        assert_eq!(d.attempts.len(), 1);
        let a = &d.attempts[0];
        assert_eq!(a.outcome, outcome);
        assert_eq!(a.attempt, 1);
        assert_eq!(a.claimed_at, now);
        assert_eq!(a.ended_at, now);
        assert_eq!(a.worker_id.as_deref(), Some("w"));
        assert_eq!(a.code_version.as_deref(), Some("test-1"));
        assert_eq!(a.failure_class, t.failure().map(|(c, _)| c));
        assert_eq!(a.error.as_ref(), t.failure().map(|(_, e)| e));
    }
}

/// An expired lease becomes a vanished attempt and the operation is claimable again; a live
/// lease is left alone.
pub async fn rescue_turns_expired_leases_into_vanished_attempts<S: FullStore>(h: Harness<S>) {
    let id = enqueue(&h, "k", EnqueueOptions::default()).await;
    let c = h.claim_all("w").await.remove(0);
    h.advance_secs(30);
    let r = h.rescue(3).await;
    assert_eq!(r.vanished, 0, "a lease that ends now has not expired");
    h.advance_secs(1);
    let r = h
        .rescue_with(VanishRule {
            retry_delay: Duration::seconds(10),
            ..rescue(3)
        })
        .await;
    assert_eq!((r.vanished, r.retried, r.dead), (1, 1, 0));
    let d = h.get(id).await;
    assert_eq!(d.operation.status, Status::Pending);
    // The attempt ran beside others (an ordinary claim): a suspect, not yet a crash.
    assert!(d.operation.suspect);
    assert_eq!(d.operation.vanished_streak, 0);
    assert_eq!(
        d.operation.next_eligible_at,
        h.clock.now() + Duration::seconds(10)
    );
    assert_eq!(d.attempts.len(), 1);
    assert_eq!(d.attempts[0].outcome, AttemptOutcome::Vanished);
    assert_eq!(d.attempts[0].claimed_at, c.claimed_at.unwrap());
    // What core decided, word for word, on the row and in the history.
    let decided = Transition::vanished(&c, &rescue(3), h.clock.now());
    assert_eq!(d.attempts[0].error.as_ref(), decided.error());
    assert_eq!(d.operation.last_error.as_ref(), decided.error());
    assert_eq!(d.attempts[0].failure_class, None);
    // A completed (isolated) attempt clears the suspect and resets the streak.
    h.advance_secs(10);
    assert!(h.claim_all("w").await.is_empty());
    let c2 = h.claim_suspect("w").await.expect("the suspect");
    assert!(c2.isolated);
    h.store
        .operation_complete(CompleteParams {
            id,
            claim_token: c2.claim_token.unwrap(),
            transition: Transition::retry(h.clock.now(), Failure::transient("x")),
        })
        .await
        .unwrap();
    let d = h.get(id).await;
    assert_eq!(d.operation.vanished_streak, 0);
    assert!(!d.operation.suspect);
    assert!(d.attempts[1].isolated);
    assert_eq!(h.claim_all("w").await.len(), 1, "no longer a suspect");
}

/// After a worker died with two operations in flight, both are suspects: the ordinary claims
/// (eligible and by id) leave them alone, the probe sees them, and the suspects' claim hands out
/// one at a time, oldest eligible first, marked isolated; an isolated attempt that ends with an
/// outcome clears its operation's flag and is recorded isolated.
pub async fn suspects_are_claimed_only_alone<S: FullStore>(h: Harness<S>) {
    let a = enqueue(&h, "k", EnqueueOptions::default()).await;
    let b = enqueue(&h, "k", EnqueueOptions::default()).await;
    let exists = |kinds: Vec<String>| h.store.operation_suspect_exists(WorkExistsParams { kinds });
    assert!(!exists(vec![]).await.unwrap());
    assert_eq!(h.claim_all("dies").await.len(), 2);
    h.advance_secs(31);
    assert_eq!(h.rescue(3).await.vanished, 2);
    assert!(exists(vec![]).await.unwrap());
    assert!(exists(vec!["k".into()]).await.unwrap());
    assert!(!exists(vec!["other".into()]).await.unwrap());
    assert!(h.claim_all("w").await.is_empty());
    let by_ids = h
        .store
        .operation_claim_by_ids(ClaimByIdsParams {
            ids: vec![a, b],
            kinds: vec![],
            claimant: h.claimant("w"),
        })
        .await
        .unwrap();
    assert!(by_ids.is_empty(), "a wake-up does not claim a suspect");
    let other_kind = h
        .store
        .operation_claim_suspect(ClaimSuspectParams {
            kinds: vec!["other".into()],
            claimant: h.claimant("w"),
        })
        .await
        .unwrap();
    assert!(other_kind.is_none());
    let first = h.claim_suspect("alone").await.expect("a suspect");
    assert_eq!((first.id, first.attempt, first.isolated), (a, 2, true));
    let second = h.claim_suspect("alone-too").await.expect("the other");
    assert_eq!((second.id, second.isolated), (b, true));
    assert!(h.claim_suspect("w").await.is_none());
    assert!(!exists(vec![]).await.unwrap(), "both are running");
    for (c, t) in [
        (&first, Transition::succeeded(None)),
        (
            &second,
            Transition::retry(h.clock.now(), Failure::transient("503")),
        ),
    ] {
        h.store
            .operation_complete(CompleteParams {
                id: c.id,
                claim_token: c.claim_token(),
                transition: t,
            })
            .await
            .unwrap();
        let d = h.get(c.id).await;
        assert!(!d.operation.suspect, "an outcome clears the flag");
        assert_eq!(
            d.attempts.iter().map(|a| a.isolated).collect::<Vec<_>>(),
            [false, true]
        );
    }
    // No longer a suspect: the ordinary claim takes it, not isolated.
    let again = h.claim_all("w").await;
    assert_eq!(again.len(), 1);
    assert!(!again[0].isolated);
}

/// The crash-loop counter counts isolated vanished attempts only: an operation whose attempts
/// vanish beside other work is retried alone, however often; one whose isolated attempts vanish
/// `vanish_limit` times in a row is dead (`crash_loop`), and its error says its own attempts
/// killed the worker.
pub async fn only_isolated_vanished_attempts_count_toward_the_crash_loop<S: FullStore>(
    h: Harness<S>,
) {
    let innocent = enqueue(&h, "k", EnqueueOptions::default()).await;
    // Beside the culprit, twice: a suspect each time, never dead.
    for round in 1..=2 {
        let c = h.claim_all("w").await;
        assert_eq!(c.len(), 1, "round {round}");
        h.advance_secs(31);
        let r = h.rescue(2).await;
        assert_eq!((r.vanished, r.dead), (1, 0), "round {round}");
        // Its isolated attempt succeeds... until the next crash beside someone else.
        let alone = h.claim_suspect("w").await.expect("suspect");
        h.store
            .operation_complete(CompleteParams {
                id: alone.id,
                claim_token: alone.claim_token(),
                transition: Transition::retry(h.clock.now(), Failure::transient("x")),
            })
            .await
            .unwrap();
    }
    let d = h.get(innocent).await;
    assert_eq!(
        (d.operation.status, d.operation.vanished_streak),
        (Status::Pending, 0)
    );

    let culprit = enqueue(&h, "k", EnqueueOptions::default()).await;
    let c = h
        .store
        .operation_claim_by_ids(ClaimByIdsParams {
            ids: vec![culprit],
            kinds: vec![],
            claimant: h.claimant("w"),
        })
        .await
        .unwrap();
    assert_eq!(c.len(), 1);
    h.advance_secs(31);
    assert_eq!(h.rescue(2).await.dead, 0, "not isolated: a suspect only");
    for n in 1..=2u32 {
        let alone = h.claim_suspect("w").await.expect("suspect");
        assert_eq!(alone.id, culprit);
        h.advance_secs(31);
        let r = h.rescue(2).await;
        assert_eq!(r.dead, u64::from(n == 2), "isolated vanish {n}");
    }
    let d = h.get(culprit).await;
    assert_eq!(d.operation.status, Status::Dead);
    assert_eq!(d.operation.terminal_reason, Some(TerminalReason::CrashLoop));
    assert!(!d.operation.suspect);
    assert_eq!(
        d.attempts
            .iter()
            .map(|a| (a.outcome, a.isolated))
            .collect::<Vec<_>>(),
        [
            (AttemptOutcome::Vanished, false),
            (AttemptOutcome::Vanished, true),
            (AttemptOutcome::Vanished, true),
        ]
    );
    let error = d.operation.last_error.expect("error");
    assert!(error.summary.contains("own attempt"), "{error:?}");
    assert!(
        error
            .decision
            .as_deref()
            .unwrap_or_default()
            .contains("crash loop"),
        "{error:?}"
    );
}

/// A release at shutdown gives the attempt back and says nothing about the operation: a suspect
/// released from its isolated attempt stays a suspect, with its crash-loop counter.
pub async fn a_release_is_refunded_and_keeps_the_suspect<S: FullStore>(h: Harness<S>) {
    let id = enqueue(&h, "k", EnqueueOptions::default()).await;
    h.claim_all("dies").await;
    h.advance_secs(31);
    h.rescue(3).await;
    let alone = h.claim_suspect("w").await.expect("suspect");
    h.advance_secs(31);
    h.rescue(3).await;
    let d = h.get(id).await;
    assert_eq!((d.operation.attempt, d.operation.vanished_streak), (2, 1));
    let alone2 = h.claim_suspect("w").await.expect("suspect");
    assert_ne!(alone.claim_token(), alone2.claim_token());
    h.store
        .operation_complete(CompleteParams {
            id,
            claim_token: alone2.claim_token(),
            transition: Transition::release(h.clock.now()),
        })
        .await
        .unwrap();
    let d = h.get(id).await;
    assert_eq!(d.operation.status, Status::Pending);
    assert_eq!(d.operation.attempt, 2, "the released attempt is refunded");
    assert!(d.operation.suspect);
    assert_eq!(d.operation.vanished_streak, 1);
    let last = d.attempts.last().expect("released row");
    assert_eq!(
        (last.outcome, last.attempt, last.isolated),
        (AttemptOutcome::Released, 3, true)
    );
}

/// A vanished attempt that was the last allowed, or whose retry would pass the deadline, ends dead.
pub async fn rescue_respects_the_attempt_bound_and_deadline<S: FullStore>(h: Harness<S>) {
    let bounded = enqueue(
        &h,
        "k",
        EnqueueOptions {
            max_attempts: Some(1),
            ..Default::default()
        },
    )
    .await;
    let deadline = h.clock.now() + Duration::seconds(40);
    let timed = enqueue(
        &h,
        "k",
        EnqueueOptions {
            deadline: Some(deadline),
            ..Default::default()
        },
    )
    .await;
    assert_eq!(h.claim_all("w").await.len(), 2);
    h.advance_secs(31);
    let r = h
        .rescue_with(VanishRule {
            retry_delay: Duration::seconds(20),
            ..rescue(5)
        })
        .await;
    assert_eq!((r.vanished, r.retried, r.dead), (2, 0, 2));
    let b = h.get(bounded).await.operation;
    assert_eq!(b.status, Status::Dead);
    assert_eq!(b.terminal_reason, Some(TerminalReason::AttemptsExhausted));
    let t = h.get(timed).await.operation;
    assert_eq!(t.status, Status::Dead);
    assert_eq!(t.terminal_reason, Some(TerminalReason::DeadlinePassed));
    assert!(t.terminal_at.is_some());
}

/// Pending and held operations past their deadline end dead; others are untouched.
pub async fn end_past_deadline_kills_waiting_operations_only<S: FullStore>(h: Harness<S>) {
    let deadline = Some(h.clock.now() + Duration::seconds(100));
    let opts = || EnqueueOptions {
        deadline,
        ..Default::default()
    };
    let waiting = enqueue(
        &h,
        "k",
        EnqueueOptions {
            delay: Some(Duration::seconds(500)),
            ..opts()
        },
    )
    .await;
    let held = enqueue(&h, "k", opts()).await;
    let running = enqueue(&h, "k", opts()).await;
    let no_deadline = enqueue(&h, "k", EnqueueOptions::default()).await;
    let claimed = h
        .store
        .operation_claim_by_ids(ClaimByIdsParams {
            kinds: vec![],
            ids: vec![held, running],
            claimant: h.claimant("w"),
        })
        .await
        .unwrap();
    let held_claim = claimed.iter().find(|c| c.id == held).unwrap();
    h.store
        .operation_complete(CompleteParams {
            id: held,
            claim_token: held_claim.claim_token.unwrap(),
            transition: Transition::hold(Failure::configuration("401 from provider")),
        })
        .await
        .unwrap();
    assert_eq!(
        h.store
            .operation_end_past_deadline(EndPastDeadlineParams { limit: 100 })
            .await
            .unwrap(),
        0
    );
    h.advance_secs(101);
    assert_eq!(
        h.store
            .operation_end_past_deadline(EndPastDeadlineParams { limit: 100 })
            .await
            .unwrap(),
        2
    );
    for id in [waiting, held] {
        let o = h.get(id).await.operation;
        assert_eq!(o.status, Status::Dead);
        assert_eq!(o.terminal_reason, Some(TerminalReason::DeadlinePassed));
        assert!(o.last_error.unwrap().decision.unwrap().contains("deadline"));
    }
    // The held one keeps the failure that held it.
    assert_eq!(
        h.get(held).await.operation.last_error.unwrap().summary,
        "401 from provider"
    );
    assert_eq!(h.get(running).await.operation.status, Status::Running);
    assert_eq!(h.get(no_deadline).await.operation.status, Status::Pending);
    // The words are core's: the patch applied to the error each one had.
    let patch = Ending::deadline_passed().patch;
    assert_eq!(
        h.get(waiting).await.operation.last_error,
        Some(patch.apply(None))
    );
    assert_eq!(
        h.get(held).await.operation.last_error,
        Some(
            patch.apply(Some(
                &OperationError::new("401 from provider")
                    .decision("held: configuration must be repaired")
                    .next_action("repair the configuration, then release it (oprec release)")
            ))
        )
    );
}

/// A vanished transition applies only while the claim it was decided for is still running with
/// an expired lease: a heartbeat that extended the lease, or a completion, since the rescuer
/// looked, wins; the listing returns each expired claim with its token.
pub async fn rescue_is_fenced_by_the_token_and_the_expired_lease<S: FullStore>(h: Harness<S>) {
    let a = enqueue(&h, "k", EnqueueOptions::default()).await;
    let b = enqueue(&h, "k", EnqueueOptions::default()).await;
    let c = enqueue(&h, "k", EnqueueOptions::default()).await;
    let claims = h.claim_all("w").await;
    assert_eq!(claims.len(), 3);
    assert!(
        h.store
            .operation_lease_expired_list(LeaseExpiredListParams { limit: 10 })
            .await
            .unwrap()
            .is_empty()
    );
    h.advance_secs(31);
    let expired = h
        .store
        .operation_lease_expired_list(LeaseExpiredListParams { limit: 10 })
        .await
        .unwrap();
    let mut ids: Vec<_> = expired.iter().map(|e| e.id).collect();
    ids.sort();
    let mut want = vec![a, b, c];
    want.sort();
    assert_eq!(ids, want);
    let token = |id| claims.iter().find(|x| x.id == id).unwrap().claim_token();
    for e in &expired {
        assert_eq!(e.claim_token(), token(e.id));
    }
    // a's worker heartbeats after all; b's worker completes; c stays silent.
    h.store
        .operation_heartbeat(HeartbeatParams {
            id: a,
            claim_token: token(a),
            lease: Duration::seconds(30),
        })
        .await
        .unwrap();
    h.store
        .operation_complete(CompleteParams {
            id: b,
            claim_token: token(b),
            transition: Transition::succeeded(None),
        })
        .await
        .unwrap();
    let now = h.clock.now();
    let rescues = expired
        .iter()
        .map(|e| CompleteParams {
            id: e.id,
            claim_token: e.claim_token(),
            transition: Transition::vanished(e, &rescue(3), now),
        })
        .collect::<Vec<_>>();
    let order: Vec<_> = rescues.iter().map(|r| r.id).collect();
    let results = h
        .store
        .operation_rescue_many(RescueManyParams { rescues })
        .await
        .unwrap();
    for (id, result) in order.iter().zip(&results) {
        let want = if *id == c {
            CompleteResult::Applied
        } else {
            CompleteResult::Stale
        };
        assert_eq!(*result, want, "{id}");
    }
    assert_eq!(h.get(a).await.operation.status, Status::Running);
    assert_eq!(h.get(b).await.operation.status, Status::Succeeded);
    let cd = h.get(c).await;
    assert_eq!(cd.operation.status, Status::Pending);
    assert_eq!(cd.attempts.len(), 1);
    assert_eq!(cd.attempts[0].outcome, AttemptOutcome::Vanished);
    // Applying the same decision again finds the claim gone.
    let again = h
        .store
        .operation_rescue_many(RescueManyParams {
            rescues: vec![CompleteParams {
                id: c,
                claim_token: token(c),
                transition: Transition::vanished(
                    expired.iter().find(|e| e.id == c).unwrap(),
                    &rescue(3),
                    now,
                ),
            }],
        })
        .await
        .unwrap();
    assert_eq!(again, vec![CompleteResult::Stale]);
    assert_eq!(h.get(c).await.attempts.len(), 1);
}

/// Work exists for a worker of some kinds while one of them is running, or pending, eligible,
/// within its deadline and held back by no control.
pub async fn work_exists_only_for_claimable_or_running_operations<S: FullStore>(h: Harness<S>) {
    let exists = |kinds: &[&str]| {
        let kinds: Vec<String> = kinds.iter().map(|k| k.to_string()).collect();
        let store = &h.store;
        async move {
            store
                .operation_work_exists(WorkExistsParams { kinds })
                .await
                .unwrap()
        }
    };
    assert!(!exists(&[]).await);
    let id = enqueue(
        &h,
        "a",
        EnqueueOptions {
            delay: Some(Duration::seconds(10)),
            ..Default::default()
        },
    )
    .await;
    assert!(!exists(&["a"]).await, "not eligible yet");
    h.advance_secs(10);
    assert!(exists(&["a"]).await && exists(&[]).await && exists(&["b", "a"]).await);
    assert!(!exists(&["b"]).await, "another kind");
    h.store
        .control_set(ControlSetParams {
            scope: ControlScope::Kind,
            value: "a".into(),
            action: ControlAction::Pause,
            until: None,
            reason: None,
            actor: "t".into(),
        })
        .await
        .unwrap();
    assert!(!exists(&["a"]).await, "paused");
    h.store
        .control_remove(ControlRemoveParams {
            scope: ControlScope::Kind,
            value: "a".into(),
        })
        .await
        .unwrap();
    let c = h.claim_all("w").await.remove(0);
    assert!(exists(&["a"]).await, "running");
    h.store
        .operation_complete(CompleteParams {
            id,
            claim_token: c.claim_token(),
            transition: Transition::succeeded(None),
        })
        .await
        .unwrap();
    assert!(!exists(&["a"]).await, "done");
}

/// Cancel ends pending, held and reconciling operations and leaves running and terminal ones.
pub async fn cancel_touches_only_waiting_operations<S: FullStore>(h: Harness<S>) {
    let pending = enqueue(&h, "k", EnqueueOptions::default()).await;
    let running = enqueue(&h, "k", EnqueueOptions::default()).await;
    h.store
        .operation_claim_by_ids(ClaimByIdsParams {
            kinds: vec![],
            ids: vec![running],
            claimant: h.claimant("w"),
        })
        .await
        .unwrap();
    let got = h
        .store
        .operation_cancel(CancelParams {
            ids: vec![pending, running, OperationId::new()],
        })
        .await
        .unwrap();
    assert_eq!(got, vec![pending]);
    let o = h.get(pending).await.operation;
    assert_eq!(o.status, Status::Cancelled);
    assert_eq!(o.terminal_reason, Some(TerminalReason::Operator));
    assert!(
        h.store
            .operation_cancel(CancelParams { ids: vec![pending] })
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(h.get(running).await.operation.status, Status::Running);
}

/// Listing filters by status, kind and class, in id order, with keyset pages.
pub async fn list_filters_and_pages<S: FullStore>(h: Harness<S>) {
    let mut ids = Vec::new();
    for i in 0..5 {
        ids.push(
            enqueue(
                &h,
                if i % 2 == 0 { "even" } else { "odd" },
                EnqueueOptions::default(),
            )
            .await,
        );
    }
    let all = h
        .store
        .operation_list(ListParams {
            limit: 100,
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(all.iter().map(|o| o.id).collect::<Vec<_>>(), ids);
    let page1 = h
        .store
        .operation_list(ListParams {
            kind: Some("even".into()),
            limit: 2,
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(
        page1.iter().map(|o| o.id).collect::<Vec<_>>(),
        vec![ids[0], ids[2]]
    );
    let page2 = h
        .store
        .operation_list(ListParams {
            kind: Some("even".into()),
            after: Some(page1[1].id),
            limit: 2,
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(page2.iter().map(|o| o.id).collect::<Vec<_>>(), vec![ids[4]]);
    // One transient failure, then filter by status and class.
    let c = h
        .store
        .operation_claim_by_ids(ClaimByIdsParams {
            kinds: vec![],
            ids: vec![ids[1]],
            claimant: h.claimant("w"),
        })
        .await
        .unwrap()
        .remove(0);
    h.store
        .operation_complete(CompleteParams {
            id: c.id,
            claim_token: c.claim_token.unwrap(),
            transition: Transition::retry(h.clock.now(), Failure::transient("503")),
        })
        .await
        .unwrap();
    let transient = h
        .store
        .operation_list(ListParams {
            status: Some(Status::Pending),
            failure_class: Some(FailureClass::Transient),
            limit: 100,
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(
        transient.iter().map(|o| o.id).collect::<Vec<_>>(),
        vec![ids[1]]
    );
    let none = h
        .store
        .operation_list(ListParams {
            status: Some(Status::Dead),
            limit: 100,
            ..Default::default()
        })
        .await
        .unwrap();
    assert!(none.is_empty());
}

/// SQL fragments, quotes, NULs-free oddities and very long strings in filters are plain data: an
/// empty result, and the table is still there.
pub async fn hostile_filter_values_are_only_data<S: FullStore>(h: Harness<S>) {
    enqueue(&h, "k", EnqueueOptions::default()).await;
    let hostile = [
        "k' OR '1'='1".to_owned(),
        "k\"; DROP TABLE operations; --".to_owned(),
        "%".to_owned(),
        "_".to_owned(),
        "k\\".to_owned(),
        "ü🦀\u{202e}".to_owned(),
        "x".repeat(100_000),
    ];
    for kind in hostile {
        let got = h
            .store
            .operation_list(ListParams {
                kind: Some(kind.clone()),
                limit: 100,
                ..Default::default()
            })
            .await
            .unwrap();
        assert!(
            got.is_empty(),
            "filter {:?} matched",
            &kind[..kind.len().min(40)]
        );
    }
    let all = h
        .store
        .operation_list(ListParams {
            limit: 100,
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(all.len(), 1);
}

/// Counts group by status, kind and last failure class.
pub async fn count_groups_by_status_kind_and_class<S: FullStore>(h: Harness<S>) {
    for _ in 0..3 {
        enqueue(&h, "a", EnqueueOptions::default()).await;
    }
    let b = enqueue(&h, "b", EnqueueOptions::default()).await;
    let c = h
        .store
        .operation_claim_by_ids(ClaimByIdsParams {
            kinds: vec![],
            ids: vec![b],
            claimant: h.claimant("w"),
        })
        .await
        .unwrap()
        .remove(0);
    h.store
        .operation_complete(CompleteParams {
            id: b,
            claim_token: c.claim_token.unwrap(),
            transition: Transition::dead(
                TerminalReason::Permanent,
                Some(Failure::permanent(OperationError::new("bad"))),
            ),
        })
        .await
        .unwrap();
    let rows = h.store.operation_count().await.unwrap();
    let find = |status: Status, kind: &str| {
        rows.iter()
            .find(|r| r.status == status && r.kind == kind)
            .map(|r| (r.failure_class, r.count))
    };
    assert_eq!(find(Status::Pending, "a"), Some((None, 3)));
    assert_eq!(
        find(Status::Dead, "b"),
        Some((Some(FailureClass::Permanent), 1))
    );
    assert_eq!(rows.len(), 2);
}

/// Publishing wake-ups is recorded on the rows.
pub async fn mark_woken_records_the_time<S: FullStore>(h: Harness<S>) {
    let a = enqueue(&h, "k", EnqueueOptions::default()).await;
    let b = enqueue(&h, "k", EnqueueOptions::default()).await;
    h.advance_secs(3);
    h.store
        .operation_mark_woken(MarkWokenParams { ids: vec![a] })
        .await
        .unwrap();
    assert_eq!(h.get(a).await.operation.last_woken_at, Some(h.clock.now()));
    assert_eq!(h.get(b).await.operation.last_woken_at, None);
}

/// A wake-up for a kind the worker does not run claims nothing.
pub async fn claim_by_ids_honours_kinds<S: FullStore>(h: Harness<S>) {
    let mine = enqueue(&h, "mine", EnqueueOptions::default()).await;
    let theirs = enqueue(&h, "theirs", EnqueueOptions::default()).await;
    let got = h
        .store
        .operation_claim_by_ids(ClaimByIdsParams {
            ids: vec![mine, theirs],
            kinds: vec!["mine".into()],
            claimant: h.claimant("w"),
        })
        .await
        .unwrap();
    assert_eq!(got.iter().map(|o| o.id).collect::<Vec<_>>(), vec![mine]);
    assert_eq!(h.get(theirs).await.operation.status, Status::Pending);
}

/// The remote id and durable steps are written only under a live claim.
pub async fn remote_id_and_steps_are_fenced<S: FullStore>(h: Harness<S>) {
    use oprec_core::store::{RemoteIdSetParams, StepSaveParams};
    let id = enqueue(&h, "k", EnqueueOptions::default()).await;
    let c = h.claim_all("w").await.remove(0);
    let token = c.claim_token.unwrap();
    h.store
        .operation_remote_id_set(RemoteIdSetParams {
            id,
            claim_token: token,
            remote_id: "ch_123".into(),
        })
        .await
        .unwrap();
    let save = |name: &str, output: serde_json::Value, claim_token| StepSaveParams {
        id,
        claim_token,
        name: name.into(),
        output,
    };
    h.store
        .operation_step_save(save("reserve", json!({"r": 1}), token))
        .await
        .unwrap();
    h.advance_secs(1);
    h.store
        .operation_step_save(save("charge", json!("ok"), token))
        .await
        .unwrap();
    // Saving a completed step again keeps the first output.
    h.store
        .operation_step_save(save("reserve", json!({"r": 2}), token))
        .await
        .unwrap();
    let stale = uuid::Uuid::now_v7();
    assert!(matches!(
        h.store
            .operation_step_save(save("late", json!(1), stale))
            .await,
        Err(Error::StaleClaim { .. })
    ));
    assert!(matches!(
        h.store
            .operation_remote_id_set(RemoteIdSetParams {
                id,
                claim_token: stale,
                remote_id: "ch_999".into(),
            })
            .await,
        Err(Error::StaleClaim { .. })
    ));
    let steps = h
        .store
        .operation_steps_get(StepsGetParams { id })
        .await
        .unwrap();
    let names: Vec<_> = steps.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, vec!["reserve", "charge"]);
    assert_eq!(steps[0].output, json!({"r": 1}));
    assert_eq!(steps[0].attempt, 1);
    h.store
        .operation_complete(CompleteParams {
            id,
            claim_token: token,
            transition: Transition::succeeded(None),
        })
        .await
        .unwrap();
    let o = h.get(id).await.operation;
    assert_eq!(
        o.remote_id.as_deref(),
        Some("ch_123"),
        "success keeps the remote id set earlier"
    );
    assert!(
        h.store
            .operation_steps_get(StepsGetParams {
                id: OperationId::new()
            })
            .await
            .unwrap()
            .is_empty()
    );
}

/// The scheduler's pick: due operations once, again after the re-wake interval, and again as
/// soon as a retry becomes eligible; never running, waiting or terminal ones.
pub async fn wake_due_picks_each_due_operation_once_per_interval<S: FullStore>(h: Harness<S>) {
    async fn due<S: FullStore>(h: &Harness<S>) -> oprec_core::Result<Vec<OperationId>> {
        let woken = h
            .store
            .operation_wake_due(WakeDueParams::all(Duration::seconds(30), 100))
            .await?;
        Ok(woken.into_iter().map(|w| w.id).collect())
    }
    let a = enqueue(&h, "k", EnqueueOptions::default()).await;
    let later = enqueue(
        &h,
        "k",
        EnqueueOptions {
            delay: Some(Duration::seconds(10)),
            ..Default::default()
        },
    )
    .await;
    let running = enqueue(&h, "k", EnqueueOptions::default()).await;
    h.store
        .operation_claim_by_ids(ClaimByIdsParams {
            ids: vec![running],
            kinds: vec![],
            claimant: h.claimant("w"),
        })
        .await
        .unwrap();
    assert_eq!(due(&h).await.unwrap(), vec![a]);
    assert_eq!(h.get(a).await.operation.last_woken_at, Some(h.clock.now()));
    assert!(due(&h).await.unwrap().is_empty(), "woken recently");
    h.advance_secs(10);
    assert_eq!(
        due(&h).await.unwrap(),
        vec![later],
        "eligible now, never woken"
    );
    h.advance_secs(31);
    let mut again = due(&h).await.unwrap();
    again.sort();
    let mut both = vec![a, later];
    both.sort();
    assert_eq!(again, both, "woken more than 30 s ago and still pending");
    // A retry scheduled after its last wake-up is due the moment it becomes eligible.
    let c = h
        .store
        .operation_claim_by_ids(ClaimByIdsParams {
            ids: vec![a],
            kinds: vec![],
            claimant: h.claimant("w"),
        })
        .await
        .unwrap()
        .remove(0);
    h.store
        .operation_complete(CompleteParams {
            id: a,
            claim_token: c.claim_token.unwrap(),
            transition: Transition::retry(
                h.clock.now() + Duration::seconds(5),
                Failure::transient("x"),
            ),
        })
        .await
        .unwrap();
    assert!(due(&h).await.unwrap().is_empty());
    h.advance_secs(5);
    assert_eq!(due(&h).await.unwrap(), vec![a]);
    assert!(!due(&h).await.unwrap().contains(&running));
    // Each pick comes with its kind, which routes its wake-up.
    let other = enqueue(&h, "other.kind", EnqueueOptions::default()).await;
    let picked = h
        .store
        .operation_wake_due(WakeDueParams::all(Duration::seconds(30), 100))
        .await
        .unwrap();
    assert_eq!(picked, vec![oprec_core::WakeUp::new(other, "other.kind")]);
}

/// An operation inserted already marked woken (its enqueuer publishes the wake-up) keeps that
/// time, and the scheduler leaves it alone until the re-wake interval has passed.
pub async fn enqueued_as_woken_waits_for_the_rewake_interval<S: FullStore>(h: Harness<S>) {
    let mut op = NewOperation::new(
        "k",
        json!({"n": 1}),
        &plain_policy(),
        EnqueueOptions::default(),
        h.clock.now(),
    )
    .unwrap();
    op.last_woken_at = Some(h.clock.now());
    let woken = h.store.operation_insert(op).await.unwrap().id;
    let plain = enqueue(&h, "k", EnqueueOptions::default()).await;
    assert_eq!(
        h.get(woken).await.operation.last_woken_at,
        Some(h.clock.now())
    );
    assert_eq!(h.get(plain).await.operation.last_woken_at, None);
    let due = || async {
        h.store
            .operation_wake_due(WakeDueParams::all(Duration::seconds(30), 100))
            .await
            .map(|woken| woken.into_iter().map(|w| w.id).collect::<Vec<_>>())
    };
    assert_eq!(due().await.unwrap(), vec![plain]);
    h.advance_secs(31);
    let mut both = due().await.unwrap();
    both.sort();
    let mut expected = vec![woken, plain];
    expected.sort();
    assert_eq!(both, expected, "woken more than 30 s ago and still pending");
}

/// The dashboard's filters: terminal reason, error text (literal, case-insensitive), creation
/// time range, and keyset pages newest first.
pub async fn list_filters_by_reason_error_and_time_newest_first<S: FullStore>(h: Harness<S>) {
    let start = h.clock.now();
    let mut ids = Vec::new();
    for i in 0..5 {
        let id = enqueue(&h, "k", EnqueueOptions::default()).await;
        ids.push(id);
        h.advance_secs(60);
        let c = h.claim_all("w").await;
        assert_eq!(c.len(), 1, "operation {i} claimable");
        let summary = if i % 2 == 0 {
            "Card DECLINED by 100%_issuer"
        } else {
            "timeout"
        };
        let reason = if i == 4 {
            TerminalReason::AttemptsExhausted
        } else {
            TerminalReason::Permanent
        };
        h.store
            .operation_complete(CompleteParams {
                id,
                claim_token: c[0].claim_token.unwrap(),
                transition: Transition::dead(
                    reason,
                    Some(Failure::new(
                        FailureClass::Permanent,
                        OperationError::new(summary),
                    )),
                ),
            })
            .await
            .unwrap();
    }
    let list = |p: ListParams| async {
        h.store
            .operation_list(p)
            .await
            .unwrap()
            .into_iter()
            .map(|o| o.id)
            .collect::<Vec<_>>()
    };
    let text = list(ListParams {
        error_contains: Some("declined by 100%_".into()),
        limit: 100,
        ..Default::default()
    })
    .await;
    assert_eq!(
        text,
        vec![ids[0], ids[2], ids[4]],
        "literal, case-insensitive"
    );
    assert!(
        list(ListParams {
            error_contains: Some("declined by 1%".into()),
            limit: 100,
            ..Default::default()
        })
        .await
        .is_empty(),
        "`%` is not a wildcard"
    );
    let exhausted = list(ListParams {
        terminal_reason: Some(TerminalReason::AttemptsExhausted),
        limit: 100,
        ..Default::default()
    })
    .await;
    assert_eq!(exhausted, vec![ids[4]]);
    let window = list(ListParams {
        created_since: Some(start + Duration::seconds(60)),
        created_until: Some(start + Duration::seconds(180)),
        limit: 100,
        ..Default::default()
    })
    .await;
    assert_eq!(
        window,
        vec![ids[1], ids[2]],
        "since inclusive, until exclusive"
    );
    let page1 = list(ListParams {
        newest_first: true,
        limit: 2,
        ..Default::default()
    })
    .await;
    assert_eq!(page1, vec![ids[4], ids[3]]);
    let page2 = list(ListParams {
        newest_first: true,
        after: Some(ids[3]),
        limit: 2,
        ..Default::default()
    })
    .await;
    assert_eq!(page2, vec![ids[2], ids[1]]);
    let page3 = list(ListParams {
        newest_first: true,
        after: Some(ids[1]),
        error_contains: Some("DECLINED".into()),
        limit: 2,
        ..Default::default()
    })
    .await;
    assert_eq!(page3, vec![ids[0]], "filters and pages together");
}

/// The listing takes an operator's filter as re-drive and quarantine do: several kinds and
/// classes at once, a dependency (the kind's own or one a failure named), ids, beside the
/// single-valued fields.
pub async fn list_takes_an_operators_filter<S: FullStore>(h: Harness<S>) {
    use oprec_core::operator::OperationFilter;
    let a = enqueue(&h, "a", EnqueueOptions::default()).await;
    let b = enqueue(&h, "b", EnqueueOptions::default()).await;
    let c = enqueue(&h, "c", EnqueueOptions::default()).await;
    let mut op = NewOperation::new(
        "d",
        json!({"n": 1}),
        &plain_policy(),
        EnqueueOptions::default(),
        h.clock.now(),
    )
    .unwrap();
    op.dependency = Some("bank".into());
    let banked = h.store.operation_insert(op).await.unwrap().id;
    // b fails naming the catalogue: a dependency filter finds it too.
    let claim = h
        .store
        .operation_claim_by_ids(ClaimByIdsParams {
            kinds: vec![],
            ids: vec![b],
            claimant: h.claimant("w"),
        })
        .await
        .unwrap()
        .remove(0);
    h.store
        .operation_complete(CompleteParams {
            id: b,
            claim_token: claim.claim_token.unwrap(),
            transition: Transition::retry(
                h.clock.now(),
                Failure::transient("catalogue incomplete").about_dependency("catalogue"),
            ),
        })
        .await
        .unwrap();
    let list = |filter: OperationFilter| async {
        h.store
            .operation_list(ListParams {
                filter,
                limit: 100,
                ..Default::default()
            })
            .await
            .unwrap()
            .into_iter()
            .map(|o| o.id)
            .collect::<Vec<_>>()
    };
    assert_eq!(
        list(OperationFilter {
            kinds: vec!["a".into(), "c".into()],
            ..Default::default()
        })
        .await,
        vec![a, c]
    );
    assert_eq!(
        list(OperationFilter {
            classes: vec![FailureClass::Transient, FailureClass::Permanent],
            ..Default::default()
        })
        .await,
        vec![b]
    );
    assert_eq!(
        list(OperationFilter {
            dependency: Some("bank".into()),
            ..Default::default()
        })
        .await,
        vec![banked]
    );
    assert_eq!(
        list(OperationFilter {
            dependency: Some("catalogue".into()),
            ..Default::default()
        })
        .await,
        vec![b],
        "a dependency its last failure named"
    );
    assert_eq!(
        list(OperationFilter {
            ids: vec![c, a],
            kinds: vec!["a".into(), "b".into()],
            ..Default::default()
        })
        .await,
        vec![a],
        "every field narrows"
    );
    assert!(
        list(OperationFilter {
            reasons: vec![TerminalReason::Permanent],
            ..Default::default()
        })
        .await
        .is_empty(),
        "nothing has ended"
    );
}
