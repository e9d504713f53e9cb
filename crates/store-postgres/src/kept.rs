//! The connection that enqueues keep between their statements.
//!
//! sqlx tests every pooled connection with a round trip (`Sync`) as it goes back to the pool,
//! whatever the pool's settings, so a statement on a pooled connection costs the server two round
//! trips. Single enqueues are one statement per group of callers (group commit, oprec-runtime), a
//! few thousand a second, and that second round trip, on the machine the statement runs on, made
//! each group's round 0.07-0.1 ms (about a tenth) longer (BENCHMARKS.md, 2026-12-06 morning).
//!
//! So an enqueue's statement keeps its connection for the next one instead of handing it back:
//! the next enqueue takes it if it comes within [`CHECK_CONNECTIONS_IDLE_FOR`] (the same bound
//! the pool keeps for checking a connection before use), and a task gives it back to the pool
//! once none has for that long, so an idle process holds no more connections than before. A
//! connection is kept only after a statement that succeeded; after an error it goes back to the
//! pool, which tests it and drops it if it is broken, as for any other statement. A statement
//! abandoned half-way (its caller stopped waiting) drops its connection the same way. A pool of
//! fewer than [`KEEP_FROM_POOL_SIZE`] connections keeps none, so that the one kept can never be
//! the connection another statement waits for.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use sqlx::Postgres;
use sqlx::pool::PoolConnection;

use crate::CHECK_CONNECTIONS_IDLE_FOR;

/// The smallest pool whose enqueues keep a connection: with it, at least three others remain.
pub(crate) const KEEP_FROM_POOL_SIZE: u32 = 4;

/// The kept connection, behind one lock with whether a task watches it.
#[derive(Debug, Default)]
pub(crate) struct Kept {
    slot: Mutex<Slot>,
}

#[derive(Debug, Default)]
struct Slot {
    /// The kept connection, when there is one, and when its last statement ended.
    conn: Option<(PoolConnection<Postgres>, Instant)>,
    /// Whether a task is watching the slot to give an idle connection back.
    watched: bool,
}

impl Kept {
    fn slot(&self) -> MutexGuard<'_, Slot> {
        self.slot.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The kept connection, if one is there and was used within [`CHECK_CONNECTIONS_IDLE_FOR`];
    /// an older one goes back to the pool (whose check before use then applies to it).
    pub(crate) fn take(&self) -> Option<PoolConnection<Postgres>> {
        let kept = self.slot().conn.take();
        match kept {
            Some((conn, used)) if used.elapsed() < CHECK_CONNECTIONS_IDLE_FOR => Some(conn),
            _ => None,
        }
    }

    /// Gives the kept connection, if any, back to the pool now.
    pub(crate) fn give_back(&self) {
        let kept = self.slot().conn.take();
        drop(kept);
    }

    /// Keeps `conn` for the next enqueue (or hands it back to the pool if another is kept
    /// already), and makes sure a task gives it back once it sits idle.
    pub(crate) fn keep(self: &Arc<Self>, conn: PoolConnection<Postgres>) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let mut slot = self.slot();
        if slot.conn.is_some() {
            return;
        }
        slot.conn = Some((conn, Instant::now()));
        if !slot.watched {
            slot.watched = true;
            runtime.spawn(watch(self.clone()));
        }
    }
}

/// Gives the kept connection back to the pool once it has sat idle for
/// [`CHECK_CONNECTIONS_IDLE_FOR`], then stops (the next [`Kept::keep`] starts another).
async fn watch(kept: Arc<Kept>) {
    loop {
        tokio::time::sleep(CHECK_CONNECTIONS_IDLE_FOR).await;
        let mut slot = kept.slot();
        let idle = match &slot.conn {
            Some((_, used)) => used.elapsed() >= CHECK_CONNECTIONS_IDLE_FOR,
            None => true,
        };
        if idle {
            // Under the slot's lock: a `keep` that fills the slot after this sees it unwatched
            // and starts a watcher of its own.
            slot.watched = false;
            let conn = slot.conn.take();
            drop(slot);
            drop(conn);
            return;
        }
    }
}
