//! Claims under contention on a real PostgreSQL, judged by the database's own clock.

mod common;

use std::sync::Arc;

use chrono::Duration;
use oprec_core::store::{
    ClaimByIdsParams, ClaimEligibleParams, ClaimSuspectParams, Claimant, CompleteParams,
    OperationGetParams,
};
use oprec_core::{
    AttemptOutcome, EnqueueOptions, EnqueueStore, Error, NewOperation, RetryPolicy, Status, Store,
    Transition, VanishRule, WorkerStore,
};
use serde_json::json;
use tokio::sync::Barrier;

fn policy() -> RetryPolicy {
    RetryPolicy::builder()
        .timeout(Duration::seconds(30))
        .max_attempts(3)
        .local_only()
        .jitter(oprec_core::Jitter::None)
        .build()
        .unwrap()
}

fn claimant(worker: usize) -> Claimant {
    Claimant {
        worker_id: format!("racer-{worker}"),
        code_version: None,
        lease: Duration::seconds(30),
    }
}

/// 16 tasks race to claim the same operation, 500 times over: exactly one wins each round.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixteen_racers_claim_each_operation_exactly_once() {
    const RACERS: usize = 16;
    const ROUNDS: usize = 500;
    let store = Arc::new(common::fresh_store(RACERS as u32).await);
    // One operation per round, enqueued just before the round, so the only eligible row is the
    // one everybody races for (SKIP LOCKED would rightly hand a poller another eligible row).
    let ids = Arc::new(std::sync::Mutex::new(Vec::new()));
    let barrier = Arc::new(Barrier::new(RACERS));
    let mut tasks = Vec::new();
    for racer in 0..RACERS {
        let (store, barrier, ids) = (store.clone(), barrier.clone(), ids.clone());
        tasks.push(tokio::spawn(async move {
            let mut wins = Vec::new();
            for round in 0..ROUNDS {
                if racer == 0 {
                    let now = store.now().await.unwrap();
                    let op = NewOperation::new(
                        "race",
                        json!({"round": round}),
                        &policy(),
                        EnqueueOptions::default(),
                        now,
                    )
                    .unwrap();
                    let id = store.operation_insert(op).await.unwrap().id;
                    ids.lock().unwrap().push(id);
                }
                barrier.wait().await;
                let id = ids.lock().unwrap()[round];
                // Half the racers come through the wake-up path, half through polling.
                let got = if racer % 2 == 0 {
                    store
                        .operation_claim_by_ids(ClaimByIdsParams {
                            kinds: vec![],
                            ids: vec![id],
                            claimant: claimant(racer),
                        })
                        .await
                        .unwrap()
                } else {
                    store
                        .operation_claim_eligible(ClaimEligibleParams {
                            above_default_only: false,
                            kinds: vec!["race".into()],
                            limit: 1,
                            claimant: claimant(racer),
                        })
                        .await
                        .unwrap()
                };
                wins.extend(got.into_iter().map(|o| (round, o)));
                barrier.wait().await;
            }
            wins
        }));
    }
    let mut per_round = vec![0usize; ROUNDS];
    let mut results = Vec::new();
    for t in tasks {
        results.extend(t.await.unwrap());
    }
    let ids = ids.lock().unwrap().clone();
    for (round, op) in results {
        assert_eq!(
            op.id, ids[round],
            "a claim took an operation of another round"
        );
        assert_eq!(op.attempt, 1);
        per_round[round] += 1;
    }
    assert!(
        per_round.iter().all(|n| *n == 1),
        "claims per round: {per_round:?}"
    );
    let running: u64 = store
        .operation_count()
        .await
        .unwrap()
        .iter()
        .filter(|r| r.status == Status::Running)
        .map(|r| r.count)
        .sum();
    assert_eq!(running, ROUNDS as u64);
}

/// With the database's clock: a lease that expired is rescued, the old claimant's completion is
/// rejected as stale, and the newer result stands.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_late_completion_after_a_reclaim_is_rejected() {
    let store = common::fresh_store(4).await;
    let now = store.now().await.unwrap();
    let id = store
        .operation_insert(
            NewOperation::new("k", json!({}), &policy(), EnqueueOptions::default(), now).unwrap(),
        )
        .await
        .unwrap()
        .id;
    let short = Claimant {
        lease: Duration::milliseconds(50),
        ..claimant(0)
    };
    let old = store
        .operation_claim_by_ids(ClaimByIdsParams {
            kinds: vec![],
            ids: vec![id],
            claimant: short,
        })
        .await
        .unwrap()
        .remove(0);
    // Wait for the database's clock to pass the lease; poll instead of guessing a sleep.
    let mut rescued = 0;
    for _ in 0..200 {
        rescued = oprec_testkit::rescue_pass(&store, &VanishRule::default())
            .await
            .unwrap()
            .vanished;
        if rescued == 1 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert_eq!(rescued, 1);
    // Its attempt vanished: a suspect, which a wake-up does not claim; it runs alone.
    let by_id = store
        .operation_claim_by_ids(ClaimByIdsParams {
            kinds: vec![],
            ids: vec![id],
            claimant: claimant(1),
        })
        .await
        .unwrap();
    assert!(by_id.is_empty());
    let new = store
        .operation_claim_suspect(ClaimSuspectParams {
            kinds: vec![],
            claimant: claimant(1),
        })
        .await
        .unwrap()
        .expect("the suspect");
    assert_eq!(new.attempt, 2);
    store
        .operation_complete(CompleteParams {
            id,
            claim_token: new.claim_token(),
            transition: Transition::succeeded(Some("from-new".into())),
        })
        .await
        .unwrap();
    let late = store
        .operation_complete(CompleteParams {
            id,
            claim_token: old.claim_token(),
            transition: Transition::succeeded(Some("from-old".into())),
        })
        .await;
    assert!(matches!(late, Err(Error::StaleClaim { .. })));
    let op = store
        .operation_get(OperationGetParams { id })
        .await
        .unwrap()
        .unwrap();
    assert_eq!(op.operation.remote_id.as_deref(), Some("from-new"));
    assert_eq!(op.attempts.len(), 2);
    assert_eq!(
        op.attempts[0].stale_outcome,
        Some(AttemptOutcome::Succeeded)
    );
}
