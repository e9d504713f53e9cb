//! Migration 0022 on a database upgraded from the first release: the dead operations that died
//! before 0002 added the alert bookkeeping are taken as announced, so the first alerter after the
//! upgrade does not post the table's whole history to the webhook; a death after the bookkeeping
//! began, and an announcement that failed, are still announced.

use chrono::{Duration, Utc};
use oprec_core::maintenance::AlertClaimParams;
use oprec_core::{MaintenanceStore, Store};
use oprec_sqlite::{MIGRATOR, SqliteStore};
use sqlx::migrate::Migrator;
use uuid::Uuid;

/// The stored text of a time.
fn at(t: chrono::DateTime<Utc>) -> String {
    t.format("%Y-%m-%dT%H:%M:%S%.6fZ").to_string()
}

/// Inserts a dead operation that died at `when`.
async fn dead(pool: &sqlx::SqlitePool, when: chrono::DateTime<Utc>) -> Uuid {
    let id = Uuid::now_v7();
    sqlx::query(
        "INSERT INTO operations (id, kind, payload, status, next_eligible_at, created_at, \
         updated_at, terminal_at, terminal_reason) \
         VALUES (?1, 'k', '{}', 'dead', ?2, ?2, ?2, ?2, 'permanent')",
    )
    .bind(id.hyphenated().to_string())
    .bind(at(when))
    .execute(pool)
    .await
    .expect("insert");
    id
}

async fn migrate_below(store: &SqliteStore, version: i64) {
    let before: Vec<_> = MIGRATOR
        .iter()
        .filter(|m| m.version < version)
        .cloned()
        .collect();
    Migrator::with_migrations(before)
        .run(store.pool())
        .await
        .expect("migrate");
}

#[tokio::test]
async fn deaths_from_before_the_bookkeeping_are_not_announced_after_the_upgrade() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("temp dir");
    let url = format!("sqlite://{}", dir.path().join("oprec.db").display());
    let store = SqliteStore::connect(&url).await.expect("open");
    migrate_below(&store, 2).await;
    let pool = store.pool();
    let now = Utc::now();
    let history = [
        dead(pool, now - Duration::days(30)).await,
        dead(pool, now - Duration::days(1)).await,
        dead(pool, now - Duration::minutes(1)).await,
    ];

    // A release between 0002 and 0022 ran: one announcement failed and waits for its retry,
    // and one operation died after the bookkeeping began (0002's time is kept to the second).
    migrate_below(&store, 22).await;
    sqlx::query("UPDATE operations SET alert_failures = 1, alert_due_at = ?1 WHERE id = ?2")
        .bind(at(Utc::now()))
        .bind(history[2].hyphenated().to_string())
        .execute(pool)
        .await
        .expect("a failed announcement");
    let recent = dead(pool, Utc::now() + Duration::seconds(2)).await;

    store.migrate().await.expect("migrate to the end");

    let marked: Vec<String> =
        sqlx::query_scalar("SELECT id FROM operations WHERE alerted_at IS NOT NULL ORDER BY id")
            .fetch_all(pool)
            .await
            .expect("marked");
    let expected: Vec<String> = history[..2]
        .iter()
        .map(|id| id.hyphenated().to_string())
        .collect();
    assert_eq!(marked, expected, "deaths before 0002");
    let due = store
        .operation_alert_claim(AlertClaimParams {
            limit: 100,
            lease: Duration::seconds(30),
        })
        .await
        .expect("claim");
    let mut due: Vec<Uuid> = due.iter().map(|d| *d.operation.id.as_uuid()).collect();
    due.sort();
    let mut expected = vec![history[2], recent];
    expected.sort();
    assert_eq!(
        due, expected,
        "the failed announcement and the later death are still announced"
    );
}
