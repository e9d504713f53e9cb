//! The operation model test (oprec-testkit's `model_tests!`) against SQLite: every generated
//! sequence runs on a fresh database file.

use std::sync::Arc;

use oprec_core::{ManualClock, Store};
use oprec_sqlite::SqliteStore;
use oprec_testkit::Harness;

/// A migrated store over a new file in a temporary directory (leaked with the harness, under
/// Cargo's scratch directory for tests), reading a manual clock at the suite's start time.
async fn setup() -> Harness<SqliteStore> {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("temp dir");
    let dir = Box::leak(Box::new(dir));
    let url = format!("sqlite://{}", dir.path().join("oprec.db").display());
    let clock = Arc::new(ManualClock::new(oprec_testkit::start_time()));
    let store = SqliteStore::connect(&url)
        .await
        .expect("open SQLite file")
        .with_clock(clock.clone());
    store.migrate().await.expect("migrate");
    Harness::new(store, clock)
}

// A sequence costs milliseconds here (a schema costs more on PostgreSQL), so SQLite runs more.
oprec_testkit::model_tests!(setup, cases = 160);
