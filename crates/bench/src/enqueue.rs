//! Enqueue throughput: batches through `Client::enqueue_many`, and one operation per transaction
//! from several producers at once. No broker: this is the store's cost of recording intent.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use oprec::EnqueueOptions;
use serde::Serialize;

use crate::schema::{Database, with_schema};
use crate::{Result, noop};

/// Operations per `enqueue_many` call in the batched phase.
pub(crate) const BATCH: u64 = 1000;
/// Producers sending batches at once to fill a drain's table.
pub(crate) const BATCH_PRODUCERS: usize = 2;
/// Producers in the batched phase: one, as `oprec enqueue --count N` is, so that the figure is
/// what one producer gets.
const BATCHED_PHASE_PRODUCERS: usize = 1;

/// One enqueue phase's figures.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct EnqueueRate {
    /// Operations enqueued.
    pub ops: u64,
    /// Operations per call: a batch of `enqueue_many`, or 1 (`enqueue`).
    pub batch: u64,
    /// The transactions that inserted them (their rows' distinct `xmin`): for single enqueues,
    /// how many inserts the callers' group commits made.
    pub inserts: u64,
    /// Producers enqueueing at once.
    pub producers: usize,
    /// Wall-clock seconds.
    pub seconds: f64,
    /// `ops / seconds`.
    pub ops_per_sec: f64,
}

impl EnqueueRate {
    /// Operations per inserting transaction.
    pub fn ops_per_insert(&self) -> f64 {
        self.ops as f64 / self.inserts.max(1) as f64
    }
}

/// The transactions that inserted the schema's operations: their rows' distinct `xmin`.
async fn inserting_transactions(s: &crate::schema::Schema) -> Result<u64> {
    let n: i64 = sqlx::query_scalar("SELECT count(DISTINCT xmin::text) FROM operations")
        .fetch_one(&s.pool)
        .await?;
    Ok(u64::try_from(n).unwrap_or(0))
}

/// Enqueues `ops` operations of `demo.noop` in batches of [`BATCH`], from [`BATCH_PRODUCERS`]
/// producers, into `store`; returns the seconds taken.
pub(crate) async fn fill(client: &oprec::Client, ops: u64, producers: usize) -> Result<f64> {
    let next = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let tasks: Vec<_> = (0..producers)
        .map(|_| {
            let (client, next) = (client.clone(), next.clone());
            tokio::spawn(async move {
                loop {
                    let from = next.fetch_add(BATCH, Ordering::Relaxed);
                    if from >= ops {
                        return Ok::<_, crate::Error>(());
                    }
                    let payloads = (from..(from + BATCH).min(ops)).map(noop::payload).collect();
                    client
                        .enqueue_many(noop::KIND, payloads, EnqueueOptions::default())
                        .await?;
                }
            })
        })
        .collect();
    for t in tasks {
        t.await
            .map_err(|e| crate::Error::Check(format!("an enqueue task failed: {e}")))??;
    }
    Ok(started.elapsed().as_secs_f64())
}

pub(crate) async fn batched(
    db: &Database,
    ops: u64,
    progress: &(dyn Fn(&str) + Sync),
) -> Result<EnqueueRate> {
    let (seconds, inserts) = with_schema(db, 2, true, async |s| {
        let client = noop::client(Arc::new(s.store.clone()), None)?;
        db.checkpoint().await;
        let seconds = fill(&client, ops, BATCHED_PHASE_PRODUCERS).await?;
        Ok((seconds, inserting_transactions(s).await?))
    })
    .await?;
    let rate = EnqueueRate {
        ops,
        batch: BATCH,
        inserts,
        producers: BATCHED_PHASE_PRODUCERS,
        seconds,
        ops_per_sec: ops as f64 / seconds,
    };
    progress(&format!(
        "enqueue: {ops} operations in batches of {BATCH} from {BATCHED_PHASE_PRODUCERS} producer: {:.0} ops/s",
        rate.ops_per_sec
    ));
    Ok(rate)
}

pub(crate) async fn single(
    db: &Database,
    ops: u64,
    producers: usize,
    progress: &(dyn Fn(&str) + Sync),
) -> Result<EnqueueRate> {
    let (seconds, inserts) = with_schema(db, producers as u32, true, async |s| {
        let client = noop::client(Arc::new(s.store.clone()), None)?;
        db.checkpoint().await;
        let next = Arc::new(AtomicU64::new(0));
        let started = Instant::now();
        let tasks: Vec<_> = (0..producers)
            .map(|_| {
                let (client, next) = (client.clone(), next.clone());
                tokio::spawn(async move {
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        if i >= ops {
                            return Ok::<_, crate::Error>(());
                        }
                        client
                            .enqueue(noop::KIND, noop::payload(i), EnqueueOptions::default())
                            .await?;
                    }
                })
            })
            .collect();
        for t in tasks {
            t.await
                .map_err(|e| crate::Error::Check(format!("an enqueue task failed: {e}")))??;
        }
        let seconds = started.elapsed().as_secs_f64();
        Ok((seconds, inserting_transactions(s).await?))
    })
    .await?;
    let rate = EnqueueRate {
        ops,
        batch: 1,
        inserts,
        producers,
        seconds,
        ops_per_sec: ops as f64 / seconds,
    };
    progress(&format!(
        "enqueue: {ops} operations one per call from {producers} producers: {:.0} ops/s, in {inserts} inserts ({:.1} per insert)",
        rate.ops_per_sec,
        rate.ops_per_insert()
    ));
    Ok(rate)
}
