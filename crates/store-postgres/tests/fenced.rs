//! The claim-current read and the fenced transaction on PostgreSQL, with an effect table of the
//! test's own written through the store's transaction ([`PgFencedTx`]); and the fence at commit:
//! a claim taken over while the transaction is open rolls the effect back.

mod common;

use oprec_core::fenced::{FencedBeginParams, FencedCompleteParams};
use oprec_core::store::{CompleteParams, CompleteResult};
use oprec_core::{AttemptOutcome, EnqueueOptions, FencedStore, Status, Transition};
use oprec_postgres::{PgFencedTx, PgStore};

/// The test's effect table.
async fn effect_table(store: &PgStore) {
    sqlx::query("CREATE TABLE effects (key TEXT NOT NULL)")
        .execute(store.pool())
        .await
        .expect("create effects");
}

/// One effect row for `key`, inside the fenced transaction.
async fn effect_write(tx: &mut PgFencedTx, key: &str) {
    sqlx::query("INSERT INTO effects (key) VALUES ($1)")
        .bind(key)
        .execute(tx.conn())
        .await
        .expect("write effect");
}

/// The committed effect rows for `key`.
async fn effect_count(store: &PgStore, key: &str) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM effects WHERE key = $1")
        .bind(key)
        .fetch_one(store.pool())
        .await
        .expect("count effects")
}

oprec_testkit::fenced_conformance_tests!(common::setup, effect_table, effect_write, effect_count);

/// A zombie's transaction: opened while its claim was current, the effect written, then the
/// lease expires, the rescuer records the attempt vanished and another worker claims the
/// operation, all while the transaction stays open (PostgreSQL does not lock the operation's row
/// for it). Its completion is stale: the effect rolls back, the late outcome is noted on the
/// attempt it belonged to, and the new claim is untouched.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claim_taken_over_during_the_transaction_rolls_the_effect_back() {
    let h = common::setup().await;
    effect_table(&h.store).await;
    let id = oprec_testkit::store_cases::enqueue(&h, "k", EnqueueOptions::default()).await;
    let zombie = h.claim_all("zombie").await.remove(0);
    let mut tx = h
        .store
        .operation_fenced_begin(FencedBeginParams {
            id,
            claim_token: zombie.claim_token(),
        })
        .await
        .expect("begin");
    effect_write(&mut tx, "zombie").await;
    h.advance_secs(31);
    assert_eq!(h.rescue(3).await.vanished, 1);
    let healthy = h.claim_suspect("healthy").await.expect("the suspect");
    let r = h
        .store
        .operation_fenced_complete(FencedCompleteParams {
            tx,
            completion: CompleteParams {
                id,
                claim_token: zombie.claim_token(),
                transition: Transition::succeeded(Some("zombie".to_owned())),
            },
        })
        .await
        .expect("fenced complete");
    assert_eq!(r, CompleteResult::Stale);
    assert_eq!(effect_count(&h.store, "zombie").await, 0, "rolled back");
    let d = h.get(id).await;
    assert_eq!(d.operation.status, Status::Running);
    assert_eq!(d.operation.claim_token, Some(healthy.claim_token()));
    assert_eq!(d.operation.remote_id, None);
    assert_eq!(d.attempts.len(), 1);
    assert_eq!(d.attempts[0].outcome, AttemptOutcome::Vanished);
    assert_eq!(d.attempts[0].stale_outcome, Some(AttemptOutcome::Succeeded));
}
