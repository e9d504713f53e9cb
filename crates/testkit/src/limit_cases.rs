//! The conformance cases of limits across the fleet: every claim (eligible, by id, suspect)
//! takes no more than a running limit or a rate allows, work beyond it stays pending and unspent,
//! and what has no room never uses up a claim's batch.

use chrono::Duration;
use oprec_core::limit::{LimitRemoveParams, LimitSetParams};
use oprec_core::store::{ClaimByIdsParams, ClaimEligibleParams, ClaimGiveBackParams, HeldClaim};
use oprec_core::{EnqueueOptions, Error, FullStore, LimitScope, OperationId, Status};

use crate::Harness;
use crate::store_cases::enqueue;

/// Sets a limit as `ops`.
async fn limit<S: FullStore>(
    h: &Harness<S>,
    scope: LimitScope,
    value: &str,
    max_running: Option<u32>,
    per_second: Option<u32>,
) {
    h.store
        .limit_set(LimitSetParams {
            scope,
            value: value.into(),
            max_running,
            per_second,
            reason: Some("provider quota".into()),
            actor: "ops".into(),
        })
        .await
        .expect("limit set");
}

/// Enqueues `n` operations of `kind` calling `dependency`.
async fn many<S: FullStore>(
    h: &Harness<S>,
    n: usize,
    kind: &str,
    dependency: Option<&str>,
) -> Vec<OperationId> {
    let mut ids = Vec::new();
    for _ in 0..n {
        let options = EnqueueOptions {
            dependency: dependency.map(str::to_owned),
            ..Default::default()
        };
        ids.push(enqueue(h, kind, options).await);
    }
    ids
}

/// Claims up to `limit` eligible operations as `worker`.
async fn claim<S: FullStore>(
    h: &Harness<S>,
    worker: &str,
    limit: u32,
) -> Vec<(OperationId, String)> {
    h.store
        .operation_claim_eligible(ClaimEligibleParams {
            above_default_only: false,
            kinds: vec![],
            limit,
            claimant: h.claimant(worker),
        })
        .await
        .expect("claim")
        .into_iter()
        .map(|c| (c.id, c.kind.clone()))
        .collect()
}

fn count(claimed: &[(OperationId, String)], kind: &str) -> usize {
    claimed.iter().filter(|(_, k)| k == kind).count()
}

/// A running limit on a kind and one on a dependency hold over every claimer and every kind of
/// claim; the rest of the work is claimed as if there were none; a full limit's operations do not
/// use up a small batch; room comes back as claims end; removing the limit lifts it.
pub async fn running_limits_hold_for_every_claim<S: FullStore>(h: Harness<S>) {
    let a = many(&h, 5, "a", None).await;
    let b = many(&h, 3, "b", Some("p")).await;
    let _c = many(&h, 3, "c", None).await;
    limit(&h, LimitScope::Kind, "a", Some(2), None).await;
    limit(&h, LimitScope::Dependency, "p", Some(1), None).await;
    h.advance_secs(1);

    let first = claim(&h, "w1", 1000).await;
    assert_eq!(count(&first, "a"), 2, "{first:?}");
    assert_eq!(count(&first, "b"), 1, "{first:?}");
    assert_eq!(count(&first, "c"), 3, "{first:?}");
    assert!(
        claim(&h, "w2", 1000).await.is_empty(),
        "both limits are full"
    );

    // The full kinds are left out of the walk: a batch of one still finds other work behind them.
    let late = many(&h, 1, "c", None).await;
    assert_eq!(claim(&h, "w2", 1).await, vec![(late[0], "c".to_owned())]);

    // Wake-ups by id obey the limits too.
    let by_ids = |ids: Vec<OperationId>| async {
        h.store
            .operation_claim_by_ids(ClaimByIdsParams {
                ids,
                kinds: vec![],
                claimant: h.claimant("w3"),
            })
            .await
            .expect("claim by ids")
    };
    assert!(by_ids(a.clone()).await.is_empty(), "kind a is full");
    assert!(by_ids(b.clone()).await.is_empty(), "dependency p is full");

    // A claim given back makes room for one, and only one, of its kind.
    let held: Vec<HeldClaim> = h
        .store
        .operation_get(oprec_core::store::OperationGetParams {
            id: first.iter().find(|(_, k)| k == "a").unwrap().0,
        })
        .await
        .unwrap()
        .map(|d| HeldClaim {
            id: d.operation.id,
            claim_token: d.operation.claim_token.expect("running"),
        })
        .into_iter()
        .collect();
    h.store
        .operation_claim_give_back(ClaimGiveBackParams { claims: held })
        .await
        .unwrap();
    let again = by_ids(a.clone()).await;
    assert_eq!(again.len(), 1, "room for one: {again:?}");

    // The listing shows each limit with its use.
    let listed = h.store.limit_list().await.unwrap();
    let use_of = |v: &str| listed.iter().find(|u| u.limit.value == v).unwrap();
    assert_eq!(use_of("a").running, 2);
    assert_eq!(use_of("a").limit.max_running, Some(2));
    assert_eq!(use_of("p").running, 1);
    assert_eq!(use_of("p").limit.reason.as_deref(), Some("provider quota"));

    // Lifting the kind's limit lets the rest of a be claimed; p still holds b back.
    assert!(
        h.store
            .limit_remove(LimitRemoveParams {
                scope: LimitScope::Kind,
                value: "a".into(),
            })
            .await
            .unwrap()
    );
    let rest = claim(&h, "w1", 1000).await;
    assert_eq!(count(&rest, "a"), 3, "{rest:?}");
    assert_eq!(count(&rest, "b"), 0, "{rest:?}");
    for id in &b[1..] {
        let op = h.get(*id).await.operation;
        assert_eq!(op.status, Status::Pending, "held back, not failed");
        assert_eq!(op.attempt, 0, "its attempt is unspent");
    }
}

/// A claim with little room under a limit takes at most that room from a larger batch, whether
/// by id or eligible, oldest first.
pub async fn a_claim_takes_only_the_room_left<S: FullStore>(h: Harness<S>) {
    let a = many(&h, 6, "a", Some("p")).await;
    limit(&h, LimitScope::Dependency, "p", Some(4), None).await;
    h.advance_secs(1);
    let two = claim(&h, "w1", 2).await;
    assert_eq!(two.len(), 2);
    let ids: Vec<OperationId> = a
        .iter()
        .copied()
        .filter(|id| !two.iter().any(|(c, _)| c == id))
        .collect();
    let by_ids = h
        .store
        .operation_claim_by_ids(ClaimByIdsParams {
            ids,
            kinds: vec![],
            claimant: h.claimant("w2"),
        })
        .await
        .unwrap();
    assert_eq!(by_ids.len(), 2, "room for two of the four named");
    assert!(claim(&h, "w3", 1000).await.is_empty());
}

/// A rate admits at most its number of starts in any second, whatever the number of claims,
/// and admits again once the second has passed; a limit of nothing or of zero is refused.
pub async fn a_rate_admits_at_most_its_starts_per_second<S: FullStore>(h: Harness<S>) {
    let _ = many(&h, 10, "call", Some("provider")).await;
    let _other = many(&h, 2, "local", None).await;
    limit(&h, LimitScope::Dependency, "provider", None, Some(3)).await;
    h.advance_secs(1);
    let first = claim(&h, "w1", 1000).await;
    assert_eq!(count(&first, "call"), 3, "{first:?}");
    assert_eq!(count(&first, "local"), 2, "{first:?}");
    h.clock.advance(Duration::milliseconds(500));
    assert!(
        claim(&h, "w2", 1000).await.is_empty(),
        "the second is used up"
    );
    let listed = h.store.limit_list().await.unwrap();
    assert_eq!(listed[0].started_last_second, 3);
    assert_eq!(
        listed[0].running, 3,
        "running is counted for a rate limit too"
    );
    h.clock.advance(Duration::milliseconds(600));
    let next = claim(&h, "w2", 1000).await;
    assert_eq!(
        count(&next, "call"),
        3,
        "a new second admits three more: {next:?}"
    );

    for (running, rate) in [(None, None), (Some(0), None), (None, Some(0))] {
        let refused = h
            .store
            .limit_set(LimitSetParams {
                scope: LimitScope::Kind,
                value: "k".into(),
                max_running: running,
                per_second: rate,
                reason: None,
                actor: "ops".into(),
            })
            .await;
        assert!(
            matches!(refused, Err(Error::InvalidInput(_))),
            "{refused:?}"
        );
    }
}
