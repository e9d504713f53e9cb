//! Migration 0022 on a database upgraded from the first release: the dead operations that died
//! before 0002 added the alert bookkeeping are taken as announced, so the first alerter after the
//! upgrade does not post the table's whole history to the webhook; a death after the bookkeeping
//! began, and an announcement that failed, are still announced.

mod common;

use oprec_core::maintenance::AlertClaimParams;
use oprec_core::{MaintenanceStore, Store};
use oprec_postgres::MIGRATOR;
use sqlx::migrate::Migrator;
use uuid::Uuid;

/// Inserts a dead operation that died `age_s` seconds ago.
async fn dead(pool: &sqlx::PgPool, age_s: i64) -> Uuid {
    let id = Uuid::now_v7();
    sqlx::query(
        "INSERT INTO operations (id, kind, payload, status, next_eligible_at, created_at, \
         updated_at, terminal_at, terminal_reason) \
         VALUES ($1, 'k', '{}', 'dead', now(), now() - $2 * interval '1 second', now(), \
         now() - $2 * interval '1 second', 'permanent')",
    )
    .bind(id)
    .bind(age_s as f64)
    .execute(pool)
    .await
    .expect("insert");
    id
}

async fn migrate_below(store: &oprec_postgres::PgStore, version: i64) {
    let before: Vec<_> = MIGRATOR
        .iter()
        .filter(|m| m.version < version && !m.no_tx)
        .cloned()
        .collect();
    Migrator::with_migrations(before)
        .run(store.pool())
        .await
        .expect("migrate");
}

#[tokio::test]
async fn deaths_from_before_the_bookkeeping_are_not_announced_after_the_upgrade() {
    let store = common::empty_schema(4).await;
    migrate_below(&store, 2).await;
    let pool = store.pool();
    let history: Vec<Uuid> = [
        dead(pool, 86_400 * 30).await,
        dead(pool, 86_400).await,
        dead(pool, 60).await,
    ]
    .into();

    // A release between 0002 and 0022 ran: one announcement failed and waits for its retry,
    // and one operation died after the bookkeeping began and was not announced yet.
    migrate_below(&store, 22).await;
    sqlx::query("UPDATE operations SET alert_failures = 1, alert_due_at = now() WHERE id = $1")
        .bind(history[2])
        .execute(pool)
        .await
        .expect("a failed announcement");
    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    let recent = dead(pool, 0).await;

    store.migrate().await.expect("migrate to the end");

    let marked: Vec<Uuid> = sqlx::query_scalar(
        "SELECT o.id FROM operations o, _sqlx_migrations m \
         WHERE m.version = 2 AND o.alerted_at = m.installed_on ORDER BY o.id",
    )
    .fetch_all(pool)
    .await
    .expect("marked");
    assert_eq!(
        marked,
        history[..2].to_vec(),
        "deaths before 0002, as of 0002"
    );
    let due = store
        .operation_alert_claim(AlertClaimParams {
            limit: 100,
            lease: chrono::Duration::seconds(30),
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
