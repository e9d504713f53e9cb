//! The retention pass: removes succeeded and cancelled operations past their retention, with
//! their attempts and steps, in batches of a bounded size at a bounded pace, so that one pass
//! never holds many locks at once nor takes more than its share of the database's I/O.
//!
//! Core decides ([`RetentionPolicy::rules`]: which kinds, which status, what age); the store
//! removes one batch per call ([`RetentionStore::operation_retention_delete`]). Dead, held,
//! reconciling, pending and running operations are never removed: no rule can name them.

use std::sync::Arc;
use std::time::{Duration, Instant};

use oprec_core::{RetentionPolicy, RetentionStore};
use serde::Serialize;
use tokio_util::sync::CancellationToken;

use crate::{Registry, Stats};

/// What the retention pass needs to know.
#[derive(Clone, Debug)]
pub struct RetentionConfig {
    /// How long finished operations are kept: the default and per-kind ages. A kind's own
    /// [`Kind::retention`](crate::Kind::retention) takes precedence over its entry here.
    pub policy: RetentionPolicy,
    /// How often a pass starts (a pass runs until nothing is past its retention).
    pub interval: Duration,
    /// The most operations one statement removes: it bounds the locks one batch holds.
    pub batch: u32,
    /// The most batches per second: with `batch`, it bounds the rows (and I/O) per second.
    pub batches_per_second: u32,
    /// How often the upkeep runs: old per-minute attempt counts removed, and the tables
    /// vacuumed if [`vacuum`](Self::vacuum) says so.
    pub upkeep_every: Duration,
    /// Whether the leader vacuums oprec's tables when nothing else does (a PostgreSQL server
    /// whose autovacuum is off): removed rows leave dead versions that only a vacuum lets the
    /// database reuse. Never when autovacuum keeps the tables.
    pub vacuum: bool,
}

impl Default for RetentionConfig {
    fn default() -> Self {
        RetentionConfig {
            policy: RetentionPolicy::default(),
            interval: Duration::from_secs(30),
            batch: 1000,
            batches_per_second: 10,
            upkeep_every: Duration::from_secs(60),
            vacuum: true,
        }
    }
}

impl RetentionConfig {
    /// The policy in force for `registry`'s kinds: each kind's own retention over the
    /// configured one.
    pub fn policy_for(&self, registry: &Registry) -> RetentionPolicy {
        let mut policy = self.policy.clone();
        for kind in registry.kinds() {
            if let Some(r) = kind.own_retention() {
                policy.kinds.insert(kind.name().to_owned(), r);
            }
        }
        policy
    }

    /// The time one batch is given, by the pace.
    fn batch_every(&self) -> Duration {
        Duration::from_secs(1) / self.batches_per_second.max(1)
    }
}

/// What one retention pass did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct RetentionReport {
    /// Operations removed (with their attempts and steps).
    pub removed: u64,
    /// Statements run.
    pub batches: u64,
}

/// One pass: every rule of `policy`, batch after batch at the configured pace, until nothing
/// is past its retention or `stop` is cancelled.
pub async fn retain_once(
    store: &dyn RetentionStore,
    policy: &RetentionPolicy,
    config: &RetentionConfig,
    stats: &Stats,
    stop: &CancellationToken,
) -> oprec_core::Result<RetentionReport> {
    let mut r = RetentionReport::default();
    let every = config.batch_every();
    for rule in policy.rules() {
        loop {
            let started = Instant::now();
            let now = store.now().await?;
            let removed = store
                .operation_retention_delete(rule.batch(now, config.batch))
                .await?;
            r.batches += 1;
            r.removed += removed;
            Stats::add(&stats.retention_removed, removed);
            if removed < u64::from(config.batch) {
                break;
            }
            tokio::select! {
                _ = stop.cancelled() => return Ok(r),
                _ = tokio::time::sleep(every.saturating_sub(started.elapsed())) => {}
            }
        }
    }
    if r.removed > 0 {
        tracing::debug!(
            removed = r.removed,
            batches = r.batches,
            "finished operations past their retention removed"
        );
    }
    Ok(r)
}

/// Runs passes until `stop` is cancelled.
pub(crate) async fn run(
    store: Arc<dyn RetentionStore>,
    policy: RetentionPolicy,
    config: RetentionConfig,
    stats: Arc<Stats>,
    stop: CancellationToken,
) {
    if policy.rules().is_empty() {
        return;
    }
    loop {
        if let Err(e) = retain_once(store.as_ref(), &policy, &config, &stats, &stop).await {
            tracing::warn!(error = %e, "retention pass failed");
        }
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(config.interval) => {}
        }
    }
}
