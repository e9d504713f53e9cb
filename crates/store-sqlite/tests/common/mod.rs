//! The store every SQLite suite runs on.

use std::sync::Arc;

use oprec_core::{ManualClock, Store};
use oprec_sqlite::SqliteStore;
use oprec_testkit::Harness;

/// A migrated store over a new file, reading a manual clock at the suite's start time.
pub async fn setup() -> Harness<SqliteStore> {
    // The harness holds only the store, so the directory must outlive the test: it is leaked,
    // under Cargo's scratch directory for tests (target/tmp), which `cargo clean` removes.
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
