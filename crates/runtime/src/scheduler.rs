//! The scheduler: re-selects eligible operations from the store and publishes their wake-ups, so
//! a purged, lost or late broker backlog is rebuilt and retries wake when their rung comes due.
//! Each wake-up goes to its kind's stream or queue, so only the workers of that kind receive it.
//! Selecting marks the rows woken in the same statement, so several schedulers never publish the
//! same operation twice in one interval (and only the fleet's maintenance leader runs one).
//!
//! The re-wake economy: a fresh wake-up (never woken, or woken before the operation became
//! eligible) is published once, and only for a kind some live worker runs; a wake-up published
//! and not yet claimed is trusted while the broker holds as many as should be there, and stale
//! ones are re-woken per kind within a budget ([`rewake_budget`]: what seems lost, and no more
//! than the kind's consumers take in one re-wake interval). A saturated fleet therefore sees
//! each operation woken about once, instead of once per re-wake interval while it waits.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use oprec_core::maintenance::{
    BrokerLook, RewakeParams, WakeDueParams, WakeFiguresParams, WakeResetParams, rewake_budget,
};
use oprec_core::transport::check_kind;
use oprec_core::{MaintenanceStore, OperationId, Transport, WORKER_LIVE_SECS, WakeUp};
use rand::Rng;
use tokio_util::sync::CancellationToken;

use crate::Stats;

/// What the scheduler needs to know.
#[derive(Clone, Debug)]
pub struct SchedulerConfig {
    /// How often to look for due operations.
    pub interval: Duration,
    /// How long a published wake-up is trusted before the operation is woken again.
    pub rewake_after: chrono::Duration,
    /// The most wake-ups per pass.
    pub batch: u32,
    /// Wake-ups per publish call; a pass with many chunks spreads them over the interval with
    /// jitter, so a mass of operations that became eligible together does not arrive at once.
    pub chunk: usize,
    /// The re-wake economy (on by default): fresh wake-ups only for kinds a live worker runs,
    /// and stale ones re-woken per kind within [`rewake_budget`]. Off: every due operation of
    /// every kind is woken again each re-wake interval.
    pub budgeted: bool,
}

impl Default for SchedulerConfig {
    fn default() -> Self {
        SchedulerConfig {
            interval: Duration::from_secs(1),
            rewake_after: chrono::Duration::seconds(30),
            batch: 10_000,
            chunk: 1000,
            budgeted: true,
        }
    }
}

impl SchedulerConfig {
    /// How often the stale wake-ups are looked at: a third of the re-wake interval, between one
    /// pass and 10 s.
    fn look_every(&self) -> Duration {
        (self.rewake_after.to_std().unwrap_or_default() / 3)
            .clamp(self.interval, Duration::from_secs(10).max(self.interval))
    }
}

/// What one pass did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SchedulePass {
    /// Wake-ups published (fresh and re-woken).
    pub published: u64,
    /// Of those, stale operations re-woken within their kind's budget.
    pub rewoken: u64,
    /// The transport refused a publish: the rest of the pass was given back to the store
    /// (unmarked), and the next pass waits longer.
    pub publish_failed: bool,
}

/// One pass of a scheduler without memory (the runtime's own keeps what it learns between passes).
pub async fn schedule_once(
    store: &dyn MaintenanceStore,
    transport: &dyn Transport,
    config: &SchedulerConfig,
    stats: &Stats,
) -> oprec_core::Result<SchedulePass> {
    Scheduler::new(config.clone())
        .pass(store, transport, stats)
        .await
}

/// The scheduler, with what it remembers between passes: when it last looked at the stale
/// wake-ups, and per kind the broker's depth then and the wake-ups published since (fresh and
/// re-woken), from which it learns the pace of that kind's consumers.
#[derive(Debug)]
pub struct Scheduler {
    config: SchedulerConfig,
    last_look: Option<Instant>,
    flows: HashMap<String, Flow>,
    published_since: HashMap<String, u64>,
}

/// One kind's wake-ups as the scheduler last saw them: the broker's depth at the last look, and
/// the stale ones re-woken right after it was measured.
#[derive(Clone, Copy, Debug)]
struct Flow {
    at: Instant,
    depth: u64,
    published: u64,
}

impl Scheduler {
    /// A scheduler that has seen nothing yet.
    pub fn new(config: SchedulerConfig) -> Self {
        Scheduler {
            config,
            last_look: None,
            flows: HashMap::new(),
            published_since: HashMap::new(),
        }
    }

    /// One pass. Picks the due operations (with the economy: the fresh ones, of kinds a live
    /// worker runs) and publishes their wake-ups; every third of a re-wake interval it also
    /// re-wakes stale ones, per kind, within [`rewake_budget`]. When a publish fails, the
    /// operations not published are unmarked (their rows said "woken" for a wake-up the broker
    /// never took), so a later pass tries them again instead of trusting it for the re-wake
    /// interval.
    pub async fn pass(
        &mut self,
        store: &dyn MaintenanceStore,
        transport: &dyn Transport,
        stats: &Stats,
    ) -> oprec_core::Result<SchedulePass> {
        let config = &self.config;
        let live = chrono::Duration::seconds(WORKER_LIVE_SECS);
        let due = store
            .operation_wake_due(WakeDueParams {
                rewake_after: config.rewake_after,
                limit: config.batch,
                stale: !config.budgeted,
                handled_within: config.budgeted.then_some(live),
            })
            .await?;
        let mut pass = publish_spread(store, transport, config, stats, &due).await;
        let routable = due.iter().filter(|w| check_kind(&w.kind).is_ok());
        for w in routable.take(pass.published as usize) {
            *self.published_since.entry(w.kind.clone()).or_default() += 1;
        }
        let look_due = self
            .last_look
            .is_none_or(|at| at.elapsed() >= config.look_every());
        if config.budgeted && !pass.publish_failed && look_due {
            self.last_look = Some(Instant::now());
            let rewoken = self.rewake(store, transport, stats).await?;
            pass.published += rewoken.published;
            pass.rewoken = rewoken.published;
            pass.publish_failed = rewoken.publish_failed;
        }
        Stats::add(&stats.published, pass.published);
        Ok(pass)
    }

    /// Re-wakes stale operations, per kind, within the budget core decides from what should be
    /// on the broker, what is there, and how fast the kind's consumers take it.
    async fn rewake(
        &mut self,
        store: &dyn MaintenanceStore,
        transport: &dyn Transport,
        stats: &Stats,
    ) -> oprec_core::Result<SchedulePass> {
        let figures = store
            .operation_wake_figures(WakeFiguresParams {
                rewake_after: self.config.rewake_after,
                handled_within: chrono::Duration::seconds(WORKER_LIVE_SECS),
            })
            .await?;
        let mut pass = SchedulePass::default();
        let now = Instant::now();
        let mut flows = HashMap::with_capacity(figures.len());
        for f in &figures {
            if check_kind(&f.kind).is_err() {
                continue; // No stream or queue can carry it (see `publish_spread`).
            }
            let depth = transport.depth(Some(&f.kind)).await.ok();
            // Fresh wake-ups published since the last look went onto the broker after it was
            // measured then: they count as arrivals, as the re-wakes published at that look.
            let fresh = self.published_since.remove(&f.kind).unwrap_or_default();
            let pace = depth.and_then(|d| self.pace(&f.kind, d, fresh, now));
            // Asked only when it can matter: something seems missing and consumers take.
            let unseen = match depth {
                Some(d) if f.signalled > d && pace.unwrap_or(0) > 0 => {
                    transport.depth_unseen_bound(&f.kind).await.unwrap_or(0)
                }
                _ => 0,
            };
            let budget = rewake_budget(
                f,
                BrokerLook {
                    depth,
                    unseen,
                    pace,
                },
            );
            let mut published = 0;
            if budget > 0 && !pass.publish_failed {
                let due = store
                    .operation_rewake(RewakeParams {
                        kind: f.kind.clone(),
                        rewake_after: self.config.rewake_after,
                        limit: budget,
                    })
                    .await?;
                let done = publish_spread(store, transport, &self.config, stats, &due).await;
                tracing::debug!(kind = %f.kind, signalled = f.signalled, stale = f.stale,
                    depth = ?depth, unseen, pace = ?pace, budget, rewoken = done.published,
                    "stale wake-ups re-woken");
                published += done.published;
                pass.published += done.published;
                pass.publish_failed |= done.publish_failed;
            }
            if let Some(depth) = depth {
                flows.insert(
                    f.kind.clone(),
                    Flow {
                        at: now,
                        depth,
                        published,
                    },
                );
            }
        }
        self.flows = flows;
        self.published_since.clear();
        Ok(pass)
    }

    /// How many wake-ups of `kind` its consumers take in one re-wake interval, from what the
    /// broker held at the last look, what was published since (`fresh` and the last look's
    /// re-wakes), and what it holds now.
    fn pace(&self, kind: &str, depth: u64, fresh: u64, now: Instant) -> Option<u64> {
        let last = self.flows.get(kind)?;
        let taken = (last.depth + last.published + fresh).saturating_sub(depth);
        let secs = now.duration_since(last.at).as_secs_f64();
        if secs <= 0.0 {
            return None;
        }
        let per_interval =
            taken as f64 / secs * self.config.rewake_after.num_milliseconds() as f64 / 1000.0;
        Some(per_interval.round() as u64)
    }
}

/// Publishes `due` in chunks spread over the interval with jitter, each wake-up to its kind's
/// stream or queue; on a failed publish, unmarks the chunk and the rest and stops.
///
/// A kind that cannot name a stream or queue (imported under any name) would fail every batch it
/// is in, every pass, and stall the fleet's wake-ups: its operations are left out and named in
/// the log instead, and the rest go.
async fn publish_spread(
    store: &dyn MaintenanceStore,
    transport: &dyn Transport,
    config: &SchedulerConfig,
    stats: &Stats,
    due: &[WakeUp],
) -> SchedulePass {
    let (routable, unroutable): (Vec<WakeUp>, Vec<WakeUp>) = due
        .iter()
        .cloned()
        .partition(|w| check_kind(&w.kind).is_ok());
    if let Some(first) = unroutable.first() {
        Stats::add(&stats.publish_errors, 1);
        let why = check_kind(&first.kind)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        tracing::warn!(count = unroutable.len(), error = %why,
            "operations of a kind no transport can route were not woken; rename the kind, or \
             run a worker for it without a broker (it polls the store)");
    }
    let due = routable.as_slice();
    let chunk = config.chunk.max(1);
    let chunks: Vec<_> = due.chunks(chunk).collect();
    let pause = config.interval / (chunks.len().max(1) as u32);
    let mut pass = SchedulePass::default();
    for (i, part) in chunks.iter().enumerate() {
        if i > 0 {
            let jitter = rand::rng().random_range(0.5..1.5);
            tokio::time::sleep(pause.mul_f64(jitter)).await;
        }
        if let Err(e) = transport.publish(part).await {
            Stats::add(&stats.publish_errors, 1);
            let left: Vec<OperationId> = due[i * chunk..].iter().map(|w| w.id).collect();
            let unmarked = store
                .operation_wake_reset(WakeResetParams {
                    kinds: Vec::new(),
                    ids: left.clone(),
                })
                .await;
            tracing::warn!(error = %e, count = left.len(), transport = transport.name(),
                unmarked = ?unmarked, "publishing wake-ups failed; a later pass tries them again");
            pass.publish_failed = true;
            break;
        }
        pass.published += part.len() as u64;
    }
    pass
}

/// Runs passes until `stop` is cancelled. While the transport refuses publishes, passes come
/// further apart (doubling up to [`MAX_FAILING_INTERVAL`]), so an outage does not turn every
/// interval into a pick-and-unmark of the whole backlog; the first pass after it publishes.
pub(crate) async fn run(
    store: Arc<dyn MaintenanceStore>,
    transport: Arc<dyn Transport>,
    config: SchedulerConfig,
    stats: Arc<Stats>,
    stop: CancellationToken,
) {
    let mut failing = 0u32;
    let interval = config.interval;
    let mut scheduler = Scheduler::new(config);
    loop {
        match scheduler
            .pass(store.as_ref(), transport.as_ref(), &stats)
            .await
        {
            Ok(pass) if pass.publish_failed => failing = (failing + 1).min(8),
            Ok(_) => failing = 0,
            Err(e) => tracing::warn!(error = %e, "scheduler pass failed"),
        }
        let wait = (interval * (1 << failing)).min(MAX_FAILING_INTERVAL.max(interval));
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(wait) => {}
        }
    }
}

/// The longest wait between passes while publishing fails.
pub const MAX_FAILING_INTERVAL: Duration = Duration::from_secs(5);
