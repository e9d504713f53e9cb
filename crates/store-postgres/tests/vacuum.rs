//! The leader's vacuum: done exactly when the server's autovacuum does not keep oprec's tables
//! (off for the server, or turned off on one of the tables), and it reclaims what retention
//! removed.

mod common;

use oprec_core::RetentionStore;
use oprec_core::retention::{StoreVacuumParams, VacuumOutcome};

/// The dead row versions PostgreSQL counts for `operations` in the test's schema.
async fn dead_rows(pool: &sqlx::PgPool) -> i64 {
    sqlx::query_scalar(
        "SELECT n_dead_tup FROM pg_stat_user_tables
         WHERE relname = 'operations' AND schemaname = current_schema()",
    )
    .fetch_one(pool)
    .await
    .expect("dead rows")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vacuums_only_what_autovacuum_leaves_alone() {
    let store = common::fresh_store(2).await;
    let pool = store.pool().clone();
    let server_on: bool = sqlx::query_scalar("SELECT current_setting('autovacuum')::bool")
        .fetch_one(&pool)
        .await
        .expect("setting");
    let outcome = store
        .store_vacuum(StoreVacuumParams::default())
        .await
        .expect("vacuum");
    if server_on {
        assert!(
            matches!(&outcome, VacuumOutcome::NotNeeded { reason } if reason.contains("autovacuum")),
            "{outcome:?}"
        );
    } else {
        assert!(
            matches!(&outcome, VacuumOutcome::Vacuumed { tables } if tables.iter().any(|t| t == "operations")),
            "{outcome:?}"
        );
    }

    // Turned off for one table, whatever the server says: vacuumed, and the removed rows'
    // versions are reclaimed.
    sqlx::query("ALTER TABLE operation_attempts SET (autovacuum_enabled = off)")
        .execute(&pool)
        .await
        .expect("table option");
    sqlx::query(
        "INSERT INTO operations (id, kind, payload, status, next_eligible_at, terminal_at,
                                 created_at, updated_at)
         SELECT gen_random_uuid(), 'k', '{}', 'succeeded', now(), now(), now(), now()
         FROM generate_series(1, 200)",
    )
    .execute(&pool)
    .await
    .expect("rows");
    sqlx::query("DELETE FROM operations")
        .execute(&pool)
        .await
        .expect("delete");
    // The statistics collector reports with a delay; wait until it has seen the deletes.
    let mut seen = 0;
    for _ in 0..50 {
        sqlx::query("SELECT pg_stat_clear_snapshot()")
            .execute(&pool)
            .await
            .expect("clear");
        seen = dead_rows(&pool).await;
        if seen >= 200 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(seen >= 200, "the deletes left dead versions: {seen}");
    let outcome = store
        .store_vacuum(StoreVacuumParams::default())
        .await
        .expect("vacuum");
    let VacuumOutcome::Vacuumed { tables } = outcome else {
        panic!("a table without autovacuum is vacuumed: {outcome:?}");
    };
    assert_eq!(
        tables,
        [
            "operations",
            "operation_attempts",
            "operation_steps",
            "operation_counts",
            "attempt_minutes",
            "backlog_slots",
            "creation_slots"
        ]
    );
    let mut left = i64::MAX;
    for _ in 0..50 {
        sqlx::query("SELECT pg_stat_clear_snapshot()")
            .execute(&pool)
            .await
            .expect("clear");
        left = dead_rows(&pool).await;
        if left == 0 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(left, 0, "the vacuum reclaimed the removed rows");
}
