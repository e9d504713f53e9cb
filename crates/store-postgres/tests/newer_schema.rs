//! Only the newest release migrates: a schema that records a migration this binary does not
//! know (a newer release ran it) is refused, and nothing is applied.

mod common;

use oprec_core::Store;

#[tokio::test]
async fn a_schema_migrated_by_a_newer_release_is_refused() {
    let store = common::fresh_store(2).await;
    sqlx::query(
        "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time) \
         VALUES (9999, 'from a newer release', true, '\\x00', 0)",
    )
    .execute(store.pool())
    .await
    .expect("record a newer migration");
    let err = store.migrate().await.expect_err("a newer schema");
    assert!(
        err.to_string()
            .contains("migration 9999 was previously applied but is missing"),
        "{err}"
    );
}
