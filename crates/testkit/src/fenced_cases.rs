//! The conformance cases of the claim-current read ([`WorkerStore::operation_claim_current`]) and
//! of the fenced transaction ([`FencedStore`]): what every store whose database can hold a
//! handler's effect must do.
//!
//! The effect is the calling crate's own table, written through the store's transaction type:
//! [`fenced_conformance_tests!`](crate::fenced_conformance_tests) takes three functions of the
//! calling crate, one creating the table, one writing an effect row for a key through a
//! transaction, and one counting the rows for a key.
//!
//! [`WorkerStore::operation_claim_current`]: oprec_core::WorkerStore::operation_claim_current

use oprec_core::fenced::{FencedBeginParams, FencedCompleteParams};
use oprec_core::store::{ClaimCurrentParams, CompleteParams, CompleteResult, HeartbeatParams};
use oprec_core::{
    AttemptOutcome, Claimed, EnqueueOptions, Error, FencedStore, FullStore, Status, Transition,
};

use crate::Harness;
use crate::store_cases::enqueue;

/// Whether `c`'s claim is current.
async fn current<S: FullStore>(h: &Harness<S>, c: &Claimed, token: uuid::Uuid) -> bool {
    h.store
        .operation_claim_current(ClaimCurrentParams {
            id: c.id,
            claim_token: token,
        })
        .await
        .expect("claim current")
}

/// A claim is current while it runs under its token with its lease unexpired; another token, an
/// expired lease, a completed claim and a claim taken over are not.
pub async fn claim_current_follows_the_claim<S: FullStore>(h: Harness<S>) {
    let id = enqueue(&h, "k", EnqueueOptions::default()).await;
    let c = h.claim_all("w").await.remove(0);
    let token = c.claim_token();
    assert!(current(&h, &c, token).await);
    assert!(
        !current(&h, &c, uuid::Uuid::now_v7()).await,
        "another token"
    );
    h.advance_secs(31);
    assert!(!current(&h, &c, token).await, "the lease expired");
    // A heartbeat before any rescuer took it over makes it current again.
    h.store
        .operation_heartbeat(HeartbeatParams {
            id,
            claim_token: token,
            lease: chrono::Duration::seconds(30),
        })
        .await
        .expect("heartbeat");
    assert!(current(&h, &c, token).await);
    h.advance_secs(31);
    assert_eq!(h.rescue(3).await.vanished, 1);
    let next = h.claim_suspect("w2").await.expect("the suspect");
    assert!(!current(&h, &c, token).await, "taken over");
    assert!(current(&h, &next, next.claim_token()).await);
    h.store
        .operation_complete(CompleteParams {
            id,
            claim_token: next.claim_token(),
            transition: Transition::succeeded(None),
        })
        .await
        .expect("complete");
    assert!(!current(&h, &next, next.claim_token()).await, "completed");
}

/// A fenced completion commits the effect and writes the same record as an ordinary completion
/// of the same transition: status, remote id, attempt row, counts.
pub async fn fenced_completion_commits_the_effect_with_the_same_record<S, T, W, C>(
    h: Harness<S>,
    table: T,
    write: W,
    count: C,
) where
    S: FullStore + FencedStore,
    T: AsyncFn(&S),
    W: AsyncFn(&mut S::Tx, &str),
    C: AsyncFn(&S, &str) -> i64,
{
    table(&h.store).await;
    let plain = enqueue(&h, "k", EnqueueOptions::default()).await;
    let fenced = enqueue(&h, "k", EnqueueOptions::default()).await;
    let claims = h.claim_all("w").await;
    assert_eq!(claims.len(), 2);
    h.advance_secs(2);
    for c in &claims {
        let completion = CompleteParams {
            id: c.id,
            claim_token: c.claim_token(),
            transition: Transition::succeeded(Some(format!("remote-{}", c.id))),
        };
        if c.id == plain {
            h.store.operation_complete(completion).await.expect("plain");
            continue;
        }
        let mut tx = h
            .store
            .operation_fenced_begin(FencedBeginParams {
                id: c.id,
                claim_token: c.claim_token(),
            })
            .await
            .expect("begin");
        write(&mut tx, &c.id.to_string()).await;
        let r = h
            .store
            .operation_fenced_complete(FencedCompleteParams { tx, completion })
            .await
            .expect("fenced complete");
        assert_eq!(r, CompleteResult::Applied);
    }
    assert_eq!(count(&h.store, &fenced.to_string()).await, 1, "the effect");
    let (a, b) = (h.get(plain).await, h.get(fenced).await);
    assert_eq!(b.operation.status, Status::Succeeded);
    assert_eq!(
        b.operation.remote_id.as_deref(),
        Some(format!("remote-{fenced}").as_str())
    );
    let same = |d: &oprec_core::OperationDetail| {
        let o = &d.operation;
        (
            o.status,
            o.attempt,
            o.claim_token,
            o.lease_until,
            o.terminal_at,
            o.updated_at,
            d.attempts.clone(),
        )
    };
    assert_eq!(
        same(&a),
        same(&b),
        "the same record as an ordinary completion"
    );
    assert_eq!(b.attempts.len(), 1);
    assert_eq!(b.attempts[0].outcome, AttemptOutcome::Succeeded);
    let counts = h.store.operation_count().await.expect("count");
    assert_eq!(
        counts
            .iter()
            .map(|c| (c.status, c.count))
            .collect::<Vec<_>>(),
        [(Status::Succeeded, 2)]
    );
}

/// A fenced transaction opens only for a current claim, and one dropped without its completion
/// rolls the effect back and leaves the claim as it was.
pub async fn fenced_begin_needs_a_current_claim_and_drop_rolls_back<S, T, W, C>(
    h: Harness<S>,
    table: T,
    write: W,
    count: C,
) where
    S: FullStore + FencedStore,
    T: AsyncFn(&S),
    W: AsyncFn(&mut S::Tx, &str),
    C: AsyncFn(&S, &str) -> i64,
{
    table(&h.store).await;
    let id = enqueue(&h, "k", EnqueueOptions::default()).await;
    let old = h.claim_all("zombie").await.remove(0);
    let begin = |token| {
        h.store.operation_fenced_begin(FencedBeginParams {
            id,
            claim_token: token,
        })
    };
    assert!(matches!(
        begin(uuid::Uuid::now_v7()).await,
        Err(Error::StaleClaim { id: stale }) if stale == id
    ));
    let mut tx = begin(old.claim_token()).await.expect("begin");
    write(&mut tx, "dropped").await;
    drop(tx);
    assert_eq!(count(&h.store, "dropped").await, 0, "rolled back");
    assert_eq!(h.get(id).await.operation.status, Status::Running);
    // Taken over: the old claim opens nothing, and the new one completes as usual.
    h.advance_secs(31);
    assert_eq!(h.rescue(3).await.vanished, 1);
    let new = h.claim_suspect("healthy").await.expect("the suspect");
    assert!(matches!(
        begin(old.claim_token()).await,
        Err(Error::StaleClaim { .. })
    ));
    let mut tx = begin(new.claim_token()).await.expect("begin");
    write(&mut tx, "kept").await;
    let r = h
        .store
        .operation_fenced_complete(FencedCompleteParams {
            tx,
            completion: CompleteParams {
                id,
                claim_token: new.claim_token(),
                transition: Transition::succeeded(None),
            },
        })
        .await
        .expect("complete");
    assert_eq!(r, CompleteResult::Applied);
    assert_eq!(count(&h.store, "kept").await, 1);
    let d = h.get(id).await;
    assert_eq!(d.operation.status, Status::Succeeded);
    let outcomes: Vec<_> = d.attempts.iter().map(|a| a.outcome).collect();
    assert_eq!(
        outcomes,
        [AttemptOutcome::Vanished, AttemptOutcome::Succeeded]
    );
    assert!(d.attempts[1].isolated);
}
