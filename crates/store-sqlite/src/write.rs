//! Writing: one writer at a time, as SQLite allows. A module of this store alone (PostgreSQL
//! has row locks and `SKIP LOCKED` instead): every concept module that writes takes its turn here.
//!
//! SQLite admits one write transaction per database file at a time. A writer in another process
//! that finds the lock taken waits in SQLite's busy handler, which polls with sleeps growing to
//! 100 ms until the busy timeout. Writers in this process queue on an async mutex instead, which
//! hands over the turn the moment the previous writer is done, and they wait without holding a
//! pooled connection.

use oprec_core::Result;
use sqlx::{Sqlite, SqliteConnection, Transaction};
use tokio::sync::OwnedMutexGuard;

use crate::{SqliteStore, backend_error};

/// A write transaction, holding SQLite's write lock from its start (`BEGIN IMMEDIATE`) and this
/// process's writing turn until it ends.
pub(crate) struct WriteTx {
    // Dropped first: a transaction dropped without commit rolls back before the turn passes on.
    tx: Transaction<'static, Sqlite>,
    _turn: OwnedMutexGuard<()>,
}

impl WriteTx {
    /// The connection to run statements on.
    pub(crate) fn conn(&mut self) -> &mut SqliteConnection {
        &mut self.tx
    }

    /// Commits, then passes the turn on.
    pub(crate) async fn commit(self) -> Result<()> {
        self.tx.commit().await.map_err(backend_error)
    }

    /// Rolls back, then passes the turn on.
    pub(crate) async fn rollback(self) -> Result<()> {
        self.tx.rollback().await.map_err(backend_error)
    }
}

impl SqliteStore {
    /// Waits for this process's writing turn, then begins a write transaction. What it reads
    /// cannot change before it writes, and two connections can never both read and then both try
    /// to upgrade to writing (a deadlock SQLite can only answer with `SQLITE_BUSY`).
    pub(crate) async fn begin_write(&self) -> Result<WriteTx> {
        let turn = self.write_turn().await;
        let tx = self
            .pool
            .begin_with("BEGIN IMMEDIATE")
            .await
            .map_err(backend_error)?;
        Ok(WriteTx { tx, _turn: turn })
    }

    /// This process's writing turn, for a single write statement (atomic on its own).
    pub(crate) async fn write_turn(&self) -> OwnedMutexGuard<()> {
        self.writer.clone().lock_owned().await
    }
}
