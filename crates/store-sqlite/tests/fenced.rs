//! The claim-current read and the fenced transaction on SQLite, with an effect table of the
//! test's own written through the store's transaction ([`SqliteFencedTx`]).

mod common;

use oprec_sqlite::{SqliteFencedTx, SqliteStore};

/// The test's effect table.
async fn effect_table(store: &SqliteStore) {
    sqlx::query("CREATE TABLE effects (key TEXT NOT NULL)")
        .execute(store.pool())
        .await
        .expect("create effects");
}

/// One effect row for `key`, inside the fenced transaction.
async fn effect_write(tx: &mut SqliteFencedTx, key: &str) {
    sqlx::query("INSERT INTO effects (key) VALUES (?1)")
        .bind(key)
        .execute(tx.conn())
        .await
        .expect("write effect");
}

/// The committed effect rows for `key`.
async fn effect_count(store: &SqliteStore, key: &str) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM effects WHERE key = ?1")
        .bind(key)
        .fetch_one(store.pool())
        .await
        .expect("count effects")
}

oprec_testkit::fenced_conformance_tests!(common::setup, effect_table, effect_write, effect_count);
