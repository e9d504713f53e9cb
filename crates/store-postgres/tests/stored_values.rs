//! How the store reports a database it cannot read: one without the oprec tables is
//! `Error::SchemaMissing` (callers tell the operator to migrate instead of matching error text),
//! and a stored value that does not fit its core type is an error, never clamped.

mod common;

use chrono::Utc;
use oprec_core::store::OperationGetParams;
use oprec_core::{EnqueueOptions, EnqueueStore, Error, NewOperation, RetryPolicy, Store};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_schema_without_the_tables_is_schema_missing() {
    let store = common::empty_schema(2).await;
    let err = store.operation_count().await.unwrap_err();
    assert!(
        matches!(&err, Error::SchemaMissing { detail } if detail.contains("operation_counts")),
        "{err:?}"
    );
    assert!(
        !err.is_transient(),
        "migrating, not retrying, is the remedy"
    );
    assert!(err.to_string().contains("oprec migrate"), "{err}");
    store.migrate().await.expect("migrate");
    assert!(store.operation_count().await.expect("count").is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_negative_stored_count_is_an_error_not_zero() {
    let store = common::fresh_store(2).await;
    let policy = RetryPolicy::builder()
        .timeout(chrono::Duration::seconds(30))
        .max_attempts(3)
        .local_only()
        .jitter(oprec_core::Jitter::None)
        .build()
        .expect("policy");
    let op = NewOperation::new(
        "k",
        serde_json::json!({}),
        &policy,
        EnqueueOptions::default(),
        Utc::now(),
    )
    .expect("new operation");
    let id = store.operation_insert(op).await.expect("enqueue").id;
    // Only a hand-edited row can hold this: the schema's CHECK refuses it.
    for statement in [
        "ALTER TABLE operations DROP CONSTRAINT operations_attempt_check",
        "UPDATE operations SET attempt = -1",
    ] {
        sqlx::query(statement)
            .execute(store.pool())
            .await
            .expect(statement);
    }
    let err = store
        .operation_get(OperationGetParams { id })
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("unreadable stored attempt"),
        "{err}"
    );
}
