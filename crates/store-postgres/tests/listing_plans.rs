//! The operations listing picks its plan from the trigger-kept counts, not from statistics: a
//! status with more than 20,000 operations walks the primary key in id order, one with fewer is
//! found through `(status, kind, id)` and fetched by id, and a status or kind with none reads
//! nothing. Each way must list exactly what the plain statement lists, in order and across
//! pages; the table here is never analyzed.

mod common;

use chrono::Duration;
use oprec_core::store::{ClaimEligibleParams, Claimant, ListParams};
use oprec_core::{
    EnqueueOptions, EnqueueStore, NewOperation, RetryPolicy, Status, Store, WorkerStore,
};
use oprec_postgres::PgStore;
use serde_json::json;

fn policy() -> RetryPolicy {
    RetryPolicy::builder()
        .timeout(Duration::seconds(30))
        .max_attempts(3)
        .local_only()
        .jitter(oprec_core::Jitter::None)
        .build()
        .unwrap()
}

async fn add(store: &PgStore, kind: &str, n: usize) {
    let now = store.now().await.unwrap();
    for chunk in (0..n).collect::<Vec<_>>().chunks(1_000) {
        let ops = chunk
            .iter()
            .map(|i| {
                NewOperation::new(
                    kind,
                    json!({ "i": i }),
                    &policy(),
                    EnqueueOptions::default(),
                    now,
                )
                .unwrap()
            })
            .collect();
        store.operation_insert_many(ops).await.unwrap();
    }
}

/// Every page of a listing, followed by its cursor.
async fn pages(store: &PgStore, params: ListParams) -> Vec<String> {
    let mut all = Vec::new();
    let mut after = None;
    loop {
        let page = store
            .operation_list(ListParams {
                after,
                ..params.clone()
            })
            .await
            .unwrap();
        if page.is_empty() {
            return all;
        }
        after = page.last().map(|o| o.id);
        all.extend(page.into_iter().map(|o| o.id.to_string()));
    }
}

/// What the plain statement lists, newest or oldest first.
async fn plain(store: &PgStore, condition: &str, newest_first: bool) -> Vec<String> {
    let order = if newest_first { "DESC" } else { "ASC" };
    sqlx::query_scalar::<_, uuid::Uuid>(sqlx::AssertSqlSafe(format!(
        "SELECT id FROM operations WHERE {condition} ORDER BY id {order}"
    )))
    .fetch_all(store.pool())
    .await
    .unwrap()
    .into_iter()
    .map(|id| id.to_string())
    .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_plan_lists_what_the_plain_statement_lists() {
    let store = common::fresh_store(4).await;
    add(&store, "many", 20_500).await;
    add(&store, "few", 300).await;
    let claimed = store
        .operation_claim_eligible(ClaimEligibleParams {
            kinds: vec!["few".into()],
            limit: 120,
            claimant: Claimant {
                worker_id: "w".into(),
                code_version: None,
                lease: Duration::seconds(60),
            },
            above_default_only: false,
        })
        .await
        .unwrap();
    assert_eq!(claimed.len(), 120);
    for newest_first in [true, false] {
        let list = |status: Option<Status>, kind: Option<&str>, limit: u32| ListParams {
            status,
            kind: kind.map(str::to_owned),
            newest_first,
            limit,
            ..Default::default()
        };
        // More than 20,000 pending: the primary key walked in order (first page only: the whole
        // listing pages 20,680 rows).
        let many = store
            .operation_list(list(Some(Status::Pending), None, 500))
            .await
            .unwrap();
        let want = plain(&store, "status = 'pending'", newest_first).await;
        assert_eq!(want.len(), 20_680);
        let got: Vec<String> = many.iter().map(|o| o.id.to_string()).collect();
        assert_eq!(got, want[..500], "newest first: {newest_first}");
        // Few: found by (status, kind, id), paged across chunks and pages.
        let running = pages(&store, list(Some(Status::Running), None, 50)).await;
        assert_eq!(
            running,
            plain(&store, "status = 'running'", newest_first).await
        );
        let few_pending = pages(&store, list(Some(Status::Pending), Some("few"), 70)).await;
        assert_eq!(
            few_pending,
            plain(&store, "status = 'pending' AND kind = 'few'", newest_first).await
        );
        let kind_only = pages(&store, list(None, Some("few"), 1_000)).await;
        assert_eq!(kind_only, plain(&store, "kind = 'few'", newest_first).await);
        // None counted: nothing read, nothing listed.
        assert!(
            pages(&store, list(Some(Status::Dead), None, 50))
                .await
                .is_empty()
        );
        assert!(
            pages(&store, list(None, Some("no.such.kind"), 50))
                .await
                .is_empty()
        );
        // Other filters still narrow the few.
        let filtered = store
            .operation_list(ListParams {
                error_contains: Some("nothing failed".into()),
                ..list(Some(Status::Running), None, 50)
            })
            .await
            .unwrap();
        assert!(filtered.is_empty());
    }
}
