//! Claims race safely on one SQLite file: eight tasks claim the same operation at the same
//! moment, round after round. Each round exactly one wins, and no claimer sees an error: a busy
//! database is waited out, not returned.

use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;

use oprec_core::store::OperationGetParams;
use oprec_core::store::{ClaimByIdsParams, ClaimEligibleParams, Claimant, CompleteParams};
use oprec_core::{
    AttemptOutcome, Claimed, EnqueueOptions, EnqueueStore, Failure, NewOperation, OperationId,
    Status, Store, Transition, WorkerStore,
};
use oprec_sqlite::SqliteStore;
use oprec_testkit::store_cases::plain_policy;
use serde_json::json;
use sqlx::sqlite::SqliteConnectOptions;
use tokio::sync::Barrier;

const CLAIMERS: usize = 8;

async fn open(path: &Path, connections: u32) -> SqliteStore {
    let options = SqliteConnectOptions::new()
        .filename(path)
        .create_if_missing(true)
        .busy_timeout(oprec_sqlite::BUSY_TIMEOUT);
    SqliteStore::connect_with(options, connections)
        .await
        .expect("open")
}

/// Enqueues one operation, then runs `rounds` races of one claimer per store for it; the winner
/// sends it back to pending at once (a retry due now) so that the next round races again.
async fn race(stores: Vec<Arc<SqliteStore>>, rounds: u32) {
    let first = stores[0].clone();
    first.migrate().await.expect("migrate");
    let now = first.now().await.unwrap();
    let op = NewOperation::new(
        "race",
        json!({}),
        &plain_policy(),
        EnqueueOptions::default(),
        now,
    )
    .unwrap();
    let id = first.operation_insert(op).await.unwrap().id;

    let mut tokens = HashSet::new();
    for round in 1..=rounds {
        let start = Arc::new(Barrier::new(stores.len()));
        let claimers: Vec<_> = stores
            .iter()
            .enumerate()
            .map(|(n, store)| {
                let (store, start) = (store.clone(), start.clone());
                tokio::spawn(async move {
                    start.wait().await;
                    claim(&store, n, id).await
                })
            })
            .collect();
        let mut winners = Vec::new();
        for c in claimers {
            let claimed = c
                .await
                .expect("claimer task")
                .unwrap_or_else(|e| panic!("round {round}: a claimer failed: {e}"));
            winners.extend(claimed);
        }
        assert_eq!(winners.len(), 1, "round {round}: {winners:?}");
        let won = winners.remove(0);
        assert_eq!(won.attempt, round);
        let token = won.claim_token();
        assert!(tokens.insert(token), "round {round}: a token was reused");
        first
            .operation_complete(CompleteParams {
                id,
                claim_token: token,
                transition: Transition::retry(
                    first.now().await.unwrap(),
                    Failure::transient("again"),
                ),
            })
            .await
            .unwrap_or_else(|e| panic!("round {round}: release failed: {e}"));
    }

    let d = first
        .operation_get(OperationGetParams { id })
        .await
        .unwrap()
        .unwrap();
    assert_eq!(d.operation.status, Status::Pending);
    assert_eq!(d.operation.attempt, rounds);
    assert!(
        d.attempts
            .iter()
            .all(|a| a.outcome == AttemptOutcome::Error)
    );
    let numbers: Vec<u32> = d.attempts.iter().map(|a| a.attempt).collect();
    assert_eq!(numbers, (1..=rounds).collect::<Vec<_>>());
}

/// Half the claimers claim by id (a wake-up), half whatever is eligible (polling).
async fn claim(store: &SqliteStore, n: usize, id: OperationId) -> oprec_core::Result<Vec<Claimed>> {
    let claimant = Claimant {
        worker_id: format!("w{n}"),
        code_version: None,
        lease: chrono::Duration::seconds(30),
    };
    if n.is_multiple_of(2) {
        store
            .operation_claim_by_ids(ClaimByIdsParams {
                kinds: vec![],
                ids: vec![id],
                claimant,
            })
            .await
    } else {
        store
            .operation_claim_eligible(ClaimEligibleParams {
                above_default_only: false,
                kinds: vec!["race".into()],
                limit: 10,
                claimant,
            })
            .await
    }
}

/// Eight tasks sharing one store with a pool of eight connections, 200 rounds.
#[tokio::test(flavor = "multi_thread", worker_threads = 8)]
async fn exactly_one_of_eight_racing_claimers_wins_each_round() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("temp dir");
    let store = Arc::new(open(&dir.path().join("race.db"), CLAIMERS as u32).await);
    race(vec![store; CLAIMERS], 200).await;
}

/// Eight stores on the same file, as eight processes would have: nothing in this process orders
/// their writes, so they meet at SQLite's write lock and wait there (the busy timeout).
#[tokio::test(flavor = "multi_thread", worker_threads = 8)]
async fn claimers_in_separate_processes_wait_at_the_write_lock() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("temp dir");
    let path = dir.path().join("race.db");
    let mut stores = Vec::new();
    for _ in 0..CLAIMERS {
        stores.push(Arc::new(open(&path, 1).await));
    }
    race(stores, 50).await;
}
