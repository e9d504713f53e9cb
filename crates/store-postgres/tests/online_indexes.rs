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

/// A migrate of a migrated schema (a deploy step run on every release, a service that migrates
/// as it starts) takes no lock on `operations`: an online index that is built is left alone
/// after a look at the catalog. Building it again "in place" with `IF NOT EXISTS` took the
/// table's SHARE lock before finding the name taken, so the migrate waited behind every open
/// write transaction (here one holding ROW EXCLUSIVE, as any enqueue, claim or fenced
/// transaction does), and every later writer queued behind it. Without the look this migrate waits until the writer ends (a writer
/// stopped inside its transaction: until PostgreSQL ends its session, 15 s later).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migrating_a_migrated_schema_waits_for_no_writer() {
    let store = common::fresh_store(4).await;
    let mut writer = store.pool().begin().await.expect("begin");
    sqlx::query("LOCK TABLE operations IN ROW EXCLUSIVE MODE")
        .execute(&mut *writer)
        .await
        .expect("a writer's lock");
    // 10 s: below the sessions' idle-in-transaction timeout (15 s), which would end the writer
    // and so the wait.
    let migrated = tokio::time::timeout(std::time::Duration::from_secs(10), store.migrate()).await;
    writer.rollback().await.expect("rollback");
    assert!(
        matches!(migrated, Ok(Ok(()))),
        "a migrate of a migrated schema waited for an open writer: {migrated:?}"
    );
}

/// A migrate of a migrated schema does not take sqlx's migration lock either: that lock is one
/// per database, not per schema, so it waited for any process migrating another schema of the
/// database (here one whose migration holds it for
/// 60 s). The migrate must end while that other migration still runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migrating_a_migrated_schema_waits_for_no_migration_elsewhere() {
    use sqlx::migrate::{Migration, MigrationType, Migrator};
    let store = common::fresh_store(2).await;
    let elsewhere = common::empty_schema(2).await;
    let marker = format!("SELECT pg_sleep(60) -- {}", uuid::Uuid::now_v7().simple());
    let slow = Migrator::with_migrations(vec![Migration::new(
        1,
        "holds the migration lock".into(),
        MigrationType::Simple,
        sqlx::SqlSafeStr::into_sql_str(sqlx::AssertSqlSafe(marker.clone())),
        false,
    )]);
    let pool = elsewhere.pool().clone();
    let holder = tokio::spawn(async move { slow.run(&pool).await });
    // The other migration runs (and so holds the lock) once its statement shows.
    let running = || async {
        sqlx::query_scalar::<_, Option<i32>>(
            "SELECT max(pid) FROM pg_stat_activity WHERE query = $1 AND state = 'active'",
        )
        .bind(&marker)
        .fetch_one(store.pool())
        .await
        .expect("pg_stat_activity")
    };
    let mut pid = None;
    for _ in 0..600 {
        pid = running().await;
        if pid.is_some() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let pid = pid.expect("the other migration did not start in 30 s");
    let migrated = tokio::time::timeout(std::time::Duration::from_secs(30), store.migrate()).await;
    let still_running = running().await.is_some();
    // The other migration is cancelled, so that no other test waits for its lock.
    sqlx::query("SELECT pg_cancel_backend($1)")
        .bind(pid)
        .execute(store.pool())
        .await
        .expect("cancel");
    let _ = holder.await;
    assert!(
        matches!(migrated, Ok(Ok(()))),
        "a migrate of a migrated schema waited for another schema's migration: {migrated:?}"
    );
    assert!(
        still_running,
        "the migrate ended only once the other schema's migration had"
    );
}
