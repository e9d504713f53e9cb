//! Moving a legacy queue's backlog into oprec: every legacy job becomes an operation whose
//! idempotency key comes from the job (its id, or a hash of its body), so an import run twice
//! creates nothing twice. Jobs are committed in batches; a source removes its legacy messages only
//! after the batch that holds them committed. A message that is not JSON becomes a held operation
//! carrying the parse error, never dropped. A job whose key already names an operation with
//! another payload (two legacy jobs with one id and different bodies) is a conflict: it is
//! reported and counted, creates nothing, and stays in the source even when purging.
//!
//! The sources: [`redis_list`] (a Redis list of JSON jobs) and [`amqp_queue`] (an AMQP queue of
//! JSON messages). Not here: the flags and the printing (`commands::import`).

pub(crate) mod amqp_queue;
mod job;
pub(crate) mod redis_list;

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::sync::Arc;

use chrono::{Duration, Utc};
use oprec::operator::{OperationFilter, QuarantineParams};
use oprec::store::OperationGetParams;
use oprec::{EnqueueOptions, FullStore, NewOperation, OperationId, RetryPolicy, Transport};
use serde::Serialize;
use serde_json::Value;

pub(crate) use job::Job;

/// Legacy messages per batch: one transaction, one publish, one purge step.
pub(crate) const BATCH: usize = 1000;

/// How long a malformed job's operation waits before it could be claimed: long enough that it is
/// quarantined (held) before any worker sees it. Releasing it makes it eligible at once.
const MALFORMED_DELAY_HOURS: i64 = 24;

/// What an import did, for the closing line and `--json`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub(crate) struct Tally {
    /// Legacy messages read.
    pub read: u64,
    /// Operations created by this run.
    pub imported: u64,
    /// Legacy messages whose operation already existed with the same payload (an earlier run, or
    /// a repeated message).
    pub already_present: u64,
    /// Legacy messages whose key already names an operation with a different payload: nothing
    /// is created for them and they stay in the source.
    pub conflicts: u64,
    /// Malformed messages this run imported as held operations.
    pub malformed_held: u64,
    /// Legacy messages removed from the source after their operations committed.
    pub purged: u64,
    /// The first [`CONFLICTS_SHOWN`] conflicts, for the report.
    pub conflicting: Vec<Conflict>,
}

/// How many conflicts an import names one by one (all are counted).
pub(crate) const CONFLICTS_SHOWN: usize = 100;

/// A legacy job whose key is taken by an operation with another payload.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub(crate) struct Conflict {
    /// The job's idempotency key.
    pub key: String,
    /// The operation that holds the key.
    pub existing: OperationId,
}

/// One committed batch: its figures, and which of its messages are conflicts, to be left in the
/// source (in the batch's order).
#[derive(Debug, Default)]
pub(crate) struct Committed {
    /// What the batch did.
    pub tally: Tally,
    /// For each message of the batch, whether it conflicts (and so must not be removed).
    pub conflicted: Vec<bool>,
}

/// Turns legacy message bodies into committed operations of one kind.
pub(crate) struct Importer {
    /// Where the operations go.
    pub store: Arc<dyn FullStore>,
    /// Where their wake-ups go (none: the workers poll, or the scheduler wakes them later).
    pub transport: Option<Arc<dyn Transport>>,
    /// The operations' kind.
    pub kind: String,
    /// The kind's policy, which sets each operation's attempt bound and deadline.
    pub policy: RetryPolicy,
    /// The dependency the kind names, if any (as `Client::enqueue` would record it).
    pub dependency: Option<String>,
    /// The JSON field that holds a job's id.
    pub id_field: String,
    /// Who quarantines the malformed ones (the audit actor).
    pub actor: String,
}

impl Importer {
    /// Commits one batch of legacy bodies as operations and returns what it did. When this
    /// returns `Ok`, every body in the batch not marked conflicted has a committed operation
    /// holding its payload, so the source may remove those (and must keep the conflicted).
    pub(crate) async fn commit(&self, bodies: &[Vec<u8>]) -> anyhow::Result<Committed> {
        let now = Utc::now();
        let jobs: Vec<Job> = bodies
            .iter()
            .map(|b| Job::parse(b, &self.id_field))
            .collect();
        let ops = jobs
            .iter()
            .map(|j| {
                let options = EnqueueOptions {
                    idempotency_key: Some(j.key().to_owned()),
                    delay: j
                        .is_malformed()
                        .then(|| Duration::hours(MALFORMED_DELAY_HOURS)),
                    dependency: self.dependency.clone(),
                    ..EnqueueOptions::default()
                };
                let mut op =
                    NewOperation::new(&self.kind, j.payload(), &self.policy, options, now)?;
                // Inserted already marked woken, as `Client::enqueue` does: the wake-up published
                // after the commit is trusted for the re-wake interval, and no second statement
                // locks the rows while the workers claim them.
                if self.transport.is_some() && !j.is_malformed() {
                    op.last_woken_at = Some(now);
                }
                Ok(op)
            })
            .collect::<oprec::Result<Vec<_>>>()?;
        let enqueued = self.store.operation_insert_many(ops).await?;
        anyhow::ensure!(
            enqueued.len() == jobs.len(),
            "the store answered {} enqueues for {} jobs",
            enqueued.len(),
            jobs.len()
        );

        let mut tally = Tally {
            read: bodies.len() as u64,
            ..Tally::default()
        };
        let mut conflicted = vec![false; jobs.len()];
        let mut wake = Vec::new();
        // Malformed operations to hold, with their parse errors (one quarantine call per error
        // text, so each operation keeps its own).
        let mut hold: HashMap<String, Vec<OperationId>> = HashMap::new();
        // The payloads of the operations the repeated keys name, read once each.
        let mut held_payloads: HashMap<OperationId, Option<Value>> = HashMap::new();
        for (i, (job, e)) in jobs.iter().zip(&enqueued).enumerate() {
            if !e.created {
                if let Entry::Vacant(slot) = held_payloads.entry(e.id) {
                    let payload = self
                        .store
                        .operation_get(OperationGetParams { id: e.id })
                        .await?
                        .map(|d| d.operation.payload);
                    slot.insert(payload);
                }
                // A malformed job's key is the hash of its body, so it never conflicts.
                if let (Job::Valid { payload, key }, Some(Some(held))) =
                    (job, held_payloads.get(&e.id))
                    && !oprec::ops::payload::same(held, payload)
                {
                    conflicted[i] = true;
                    tally.conflicts += 1;
                    if tally.conflicting.len() < CONFLICTS_SHOWN {
                        tally.conflicting.push(Conflict {
                            key: key.clone(),
                            existing: e.id,
                        });
                    }
                    continue;
                }
                tally.already_present += 1;
                // A run interrupted between enqueue and quarantine left it pending, never
                // attempted and never quarantined: hold it now. One an operator released after
                // a quarantine keeps its last_error, and is left alone.
                if let Job::Malformed { error, .. } = job
                    && self.never_quarantined(e.id).await?
                {
                    hold.entry(error.clone()).or_default().push(e.id);
                }
                continue;
            }
            tally.imported += 1;
            match job {
                Job::Malformed { error, .. } => hold.entry(error.clone()).or_default().push(e.id),
                Job::Valid { .. } => wake.push(e.id),
            }
        }
        for (error, ids) in hold {
            let n = ids.len();
            let held = self
                .store
                .operation_quarantine(QuarantineParams {
                    filter: OperationFilter {
                        ids,
                        ..OperationFilter::default()
                    },
                    reason: format!("malformed legacy message (not JSON): {error}"),
                    actor: self.actor.clone(),
                    limit: n as u32,
                })
                .await?;
            tally.malformed_held += held;
        }
        self.wake(wake).await;
        Ok(Committed { tally, conflicted })
    }

    /// Whether an existing operation is still as an interrupted import left it.
    async fn never_quarantined(&self, id: OperationId) -> anyhow::Result<bool> {
        let Some(d) = self.store.operation_get(OperationGetParams { id }).await? else {
            return Ok(false);
        };
        let o = d.operation;
        Ok(o.status == oprec::Status::Pending && o.attempt == 0 && o.last_error.is_none())
    }

    /// Publishes wake-ups for the new operations (inserted already marked woken); a failure is
    /// logged and left to the scheduler, which wakes them again after the re-wake interval.
    async fn wake(&self, ids: Vec<OperationId>) {
        let Some(t) = &self.transport else { return };
        if ids.is_empty() {
            return;
        }
        let wakeups: Vec<oprec::WakeUp> = ids
            .iter()
            .map(|id| oprec::WakeUp::new(*id, self.kind.as_str()))
            .collect();
        if let Err(e) = t.publish(&wakeups).await {
            tracing::warn!(error = %e, count = ids.len(),
                "publishing wake-ups failed; the operations are committed and the scheduler will wake them");
        }
    }
}

impl Tally {
    /// Adds another batch's figures.
    pub(crate) fn add(&mut self, other: &Tally) {
        self.read += other.read;
        self.imported += other.imported;
        self.already_present += other.already_present;
        self.conflicts += other.conflicts;
        self.malformed_held += other.malformed_held;
        self.purged += other.purged;
        let room = CONFLICTS_SHOWN.saturating_sub(self.conflicting.len());
        self.conflicting
            .extend(other.conflicting.iter().take(room).cloned());
    }
}
