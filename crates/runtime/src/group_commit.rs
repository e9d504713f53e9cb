//! Group commit for single-operation enqueues: many callers enqueueing one operation each at the
//! same time (a web service, one enqueue per request) share one insert and one commit.
//!
//! Each caller queues its operation and waits for its result or a turn to write, whichever comes
//! first; whoever gets a turn takes every operation queued so far (up to [`MAX_GROUP`]), inserts
//! them in one store call, publishes their wake-ups in one batch, and hands every caller its own
//! result. One group is written at a time ([`WRITERS`]): while it commits, every caller who
//! arrives queues, and the next turn takes them all. A caller returns only once its row is
//! committed. Idempotency keys keep their meaning: a key repeated within a group resolves as
//! [`IdempotentBatch`](oprec_core::IdempotentBatch) says, as if the calls had come one after the
//! other. Should the shared insert fail, each operation of the group is inserted alone, so that
//! one caller's error (or refusal) is reported to that caller only.

use std::collections::HashMap;
use std::sync::Mutex;

use oprec_core::store::Enqueued;
use oprec_core::{Error, NewOperation, OperationId, Result, WakeUp};
use tokio::sync::{Semaphore, oneshot};

use crate::Client;

/// The most operations one shared insert carries.
const MAX_GROUP: usize = 1000;

/// Groups written at once. One: a statement's cost is mostly the same for one operation or
/// eight (its triggers, its commit), so the fewer and larger the groups the more operations a
/// second. With two, eight callers in a loop made groups of four at best and single enqueues were
/// 20-40% slower (BENCHMARKS.md, 2026-12-04 night).
const WRITERS: usize = 1;

/// An operation waiting for its group's commit, and where its result goes.
struct Waiting {
    op: NewOperation,
    due: bool,
    done: oneshot::Sender<Result<Enqueued>>,
}

/// The queue of waiting operations and the turns to write them.
pub(crate) struct GroupCommit {
    queue: Mutex<Vec<Waiting>>,
    turns: Semaphore,
}

impl Default for GroupCommit {
    fn default() -> Self {
        GroupCommit {
            queue: Mutex::default(),
            turns: Semaphore::new(WRITERS),
        }
    }
}

impl GroupCommit {
    /// Inserts `op` in the next group to commit; returns once it is committed (and, if `due`,
    /// its wake-up published).
    ///
    /// A caller waits for whichever comes first: its result (another caller's group carried its
    /// operation) or a turn to write, with which it writes every operation queued by then, its
    /// own among them or not. A writer hands out its group's results before it gives its turn
    /// back, and lets the callers it woke run first, so that callers who enqueue again at once
    /// (a loop, a busy service) join the next group instead of each taking a turn alone: at a
    /// turn, everyone waiting goes in one insert.
    pub(crate) async fn enqueue(
        &self,
        client: &Client,
        op: NewOperation,
        due: bool,
    ) -> Result<Enqueued> {
        let (done, mut result) = oneshot::channel();
        self.queue
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(Waiting { op, due, done });
        let dropped = || {
            Err(Error::backend(
                true,
                "the enqueue's group was dropped before it committed",
            ))
        };
        loop {
            let turn = tokio::select! {
                biased;
                r = &mut result => return r.unwrap_or_else(|_| dropped()),
                turn = self.turns.acquire() => turn,
            };
            let Ok(turn) = turn else {
                return Err(Error::backend(true, "the enqueue queue was closed"));
            };
            let group: Vec<Waiting> = {
                let mut queue = self.queue.lock().unwrap_or_else(|e| e.into_inner());
                let n = queue.len().min(MAX_GROUP);
                queue.drain(..n).collect()
            };
            if group.is_empty() {
                // Another writer took this caller's operation: its result is on the way.
                drop(turn);
                return result.await.unwrap_or_else(|_| dropped());
            }
            // Written by a task of its own, so that a caller who gives up waiting does not
            // abandon the others' operations half-way.
            let _ = tokio::spawn(write(client.clone(), group)).await;
            // The group's callers have their results: let those who enqueue again at once queue
            // before the turn is free, so that they go in the next group together.
            tokio::task::yield_now().await;
            drop(turn);
        }
    }
}

/// Inserts a group in one store call (each alone should that fail), publishes the wake-ups of
/// the due operations it created, and hands each caller its result.
async fn write(client: Client, group: Vec<Waiting>) {
    if group.is_empty() {
        return;
    }
    let store = client.store();
    let ops: Vec<NewOperation> = group.iter().map(|w| w.op.clone()).collect();
    let results: Vec<Result<Enqueued>> = match store.operation_insert_many(ops).await {
        Ok(enqueued) if enqueued.len() == group.len() => enqueued.into_iter().map(Ok).collect(),
        Ok(_) => vec_of_errors(group.len()),
        Err(e) if group.len() == 1 => vec![Err(e)],
        Err(_) => {
            let mut results = Vec::with_capacity(group.len());
            for w in &group {
                results.push(store.operation_insert(w.op.clone()).await);
            }
            results
        }
    };
    // The due operations' kinds, which route their wake-ups (a group mixes kinds).
    let due: HashMap<OperationId, &str> = group
        .iter()
        .filter(|w| w.due)
        .map(|w| (w.op.id, w.op.kind.as_str()))
        .collect();
    let fresh: Vec<WakeUp> = results
        .iter()
        .filter_map(|r| r.as_ref().ok())
        .filter(|e| e.created)
        .filter_map(|e| due.get(&e.id).map(|kind| WakeUp::new(e.id, *kind)))
        .collect();
    client.wake(fresh).await;
    for (w, r) in group.into_iter().zip(results) {
        let _ = w.done.send(r);
    }
}

fn vec_of_errors(n: usize) -> Vec<Result<Enqueued>> {
    (0..n)
        .map(|_| {
            Err(Error::backend(
                false,
                "the store returned a result count unlike the group's",
            ))
        })
        .collect()
}
