//! A fresh schema per test.

#![allow(dead_code)]

use std::sync::Arc;

use oprec_core::{ManualClock, Store};
use oprec_postgres::PgStore;
use oprec_testkit::Harness;
use sqlx::postgres::PgConnectOptions;

/// The database the tests use.
pub fn database_url() -> String {
    std::env::var("OPREC_TEST_DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_owned())
}

/// A store over a new, migrated schema, judging time by the database's clock.
pub async fn fresh_store(pool_size: u32) -> PgStore {
    let store = empty_schema(pool_size).await;
    store.migrate().await.expect("migrate");
    store
}

/// A store over a new schema without the oprec tables (not migrated).
pub async fn empty_schema(pool_size: u32) -> PgStore {
    let url = database_url();
    let schema = format!("oprec_test_{}", uuid::Uuid::now_v7().simple());
    let admin = PgStore::connect(&url)
        .await
        .unwrap_or_else(|e| panic!("PostgreSQL at {url} is required for these tests: {e}"));
    sqlx::query(sqlx::AssertSqlSafe(format!("CREATE SCHEMA {schema}")))
        .execute(admin.pool())
        .await
        .expect("create schema");
    admin.pool().close().await;
    let options: PgConnectOptions = url.parse().expect("database url");
    PgStore::connect_with(
        options.options([("search_path", schema.as_str())]),
        pool_size,
    )
    .await
    .expect("connect to test schema")
}

/// The harness for the conformance suite.
pub async fn setup() -> Harness<PgStore> {
    let clock = Arc::new(ManualClock::new(oprec_testkit::start_time()));
    let store = fresh_store(4).await.with_clock(clock.clone());
    Harness::new(store, clock)
}
