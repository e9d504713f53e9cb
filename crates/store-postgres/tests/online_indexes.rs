//! Online indexes that a failed concurrent build left invalid are built again by the next
//! migration, instead of being taken for built (`IF NOT EXISTS`) while PostgreSQL never reads them.

mod common;

use oprec_core::Store;

/// Whether each of `names` is a valid index.
async fn valid(store: &oprec_postgres::PgStore, names: &[&str]) -> Vec<bool> {
    let mut out = Vec::new();
    for name in names {
        let v: bool = sqlx::query_scalar(
            "SELECT i.indisvalid FROM pg_index i WHERE i.indexrelid = to_regclass($1)",
        )
        .bind(name)
        .fetch_one(store.pool())
        .await
        .unwrap_or_else(|e| panic!("{name}: {e}"));
        out.push(v);
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migrate_rebuilds_an_invalid_online_index() {
    let store = common::fresh_store(2).await;
    let names = ["operations_errored", "operations_finished_kind"];
    assert_eq!(valid(&store, &names).await, [true, true]);
    // What a concurrent build that failed half-way leaves.
    sqlx::query(
        "UPDATE pg_index SET indisvalid = false
         WHERE indexrelid IN ('operations_errored'::regclass, 'operations_finished_kind'::regclass)",
    )
    .execute(store.pool())
    .await
    .expect("mark invalid");
    assert_eq!(valid(&store, &names).await, [false, false]);
    store.migrate().await.expect("migrate again");
    assert_eq!(
        valid(&store, &names).await,
        [true, true],
        "the invalid indexes were built again"
    );
    // And a schema with nothing to mend is left alone.
    let before: Vec<i64> =
        sqlx::query_scalar("SELECT to_regclass(n)::oid::int8 FROM unnest($1::text[]) AS n")
            .bind(names.map(str::to_owned).to_vec())
            .fetch_all(store.pool())
            .await
            .expect("oids");
    store.migrate().await.expect("migrate once more");
    let after: Vec<i64> =
        sqlx::query_scalar("SELECT to_regclass(n)::oid::int8 FROM unnest($1::text[]) AS n")
            .bind(names.map(str::to_owned).to_vec())
            .fetch_all(store.pool())
            .await
            .expect("oids");
    assert_eq!(before, after, "valid indexes are not rebuilt");
}

/// The indexes later migrations dropped stay dropped: a migrate does not build them again only
/// to drop them, and the index that replaced one is there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migrate_leaves_dropped_indexes_dropped() {
    let store = common::fresh_store(2).await;
    let present = |name: &'static str| {
        let pool = store.pool().clone();
        async move {
            sqlx::query_scalar::<_, bool>("SELECT to_regclass($1) IS NOT NULL")
                .bind(name)
                .fetch_one(&pool)
                .await
                .expect("to_regclass")
        }
    };
    for _ in 0..2 {
        assert!(!present("operations_finished_at").await, "0041 dropped it");
        assert!(!present("operations_status_kind").await, "0040 dropped it");
        assert!(
            present("operations_status_kind_waiting_or_dead").await,
            "0039 built its replacement"
        );
        store.migrate().await.expect("migrate again");
    }
}
