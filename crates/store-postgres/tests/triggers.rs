//! The triggers on oprec's tables behave the same whatever their caller's planner settings.

mod common;

/// Every trigger function turns JIT compilation off for itself. A trigger's statements are
/// planned with the caller's settings: under the claim's `enable_sort = off` the count upsert's
/// sort is priced at 10^10, far above `jit_above_cost`, and PostgreSQL compiled it on every claim
/// (about 180 ms per claim of 1,000, a drain five times slower).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trigger_functions_never_compile_their_statements() {
    let store = common::fresh_store(1).await;
    let functions: Vec<(String, String, Option<Vec<String>>)> = sqlx::query_as(
        "SELECT c.relname::text, p.proname::text, p.proconfig
         FROM pg_trigger t
         JOIN pg_class c ON c.oid = t.tgrelid
         JOIN pg_proc p ON p.oid = t.tgfoid
         WHERE NOT t.tgisinternal AND c.relnamespace = current_schema()::regnamespace
         ORDER BY 1, 2",
    )
    .fetch_all(store.pool())
    .await
    .expect("triggers");
    // The count triggers (insert, update, delete, truncate on operations) and the attempts'
    // per-minute trigger, at least: an empty list would prove nothing.
    assert!(functions.len() >= 5, "triggers found: {functions:?}");
    for (table, function, config) in &functions {
        assert!(
            config
                .as_deref()
                .unwrap_or_default()
                .iter()
                .any(|c| c == "jit=off"),
            "the trigger function {function}() on {table} does not set jit = off: {config:?}"
        );
    }
}
