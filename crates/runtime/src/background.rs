//! What runs beside a worker's handlers: its presence row, its metrics, and, on the one process of
//! the fleet that holds the maintenance leadership, the maintenance loops (scheduler, rescuer,
//! reconciler hand-off, dead-letter alerts, retention, the tables' upkeep and the recurring kinds' ticks). Started together and stopped together,
//! after the drain, so that the presence row and the maintenance outlive the last attempt.
//!
//! Every worker that runs maintenance asks for the leadership every third of its lease
//! ([`WorkerConfig::leader_lease`]): the holder renews it and runs the loops; the others wait.
//! A leader that stops cleanly gives the leadership up, so another takes it within a third of a
//! lease; one that dies is replaced once its lease has run out. Leadership saves work: the loops
//! are safe to run twice (every write they make is fenced), so a moment with two leaders does no
//! harm.

use std::sync::Arc;
use std::time::{Duration, Instant};

use oprec_core::maintenance::{LeaderAcquireParams, LeaderReleaseParams, MAINTENANCE_LEADER};
use oprec_core::schedule::{ScheduleDeclaration, ScheduleDeclareParams};
use oprec_core::{Clock, FullStore, KindPublishParams, Transport, WorkerBeatParams};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::tally::Tally;
use crate::{
    Kind, Registry, Stats, WorkerConfig, dead_letter, presence, reconciler, recurring, rescuer,
    retention, scheduler, upkeep,
};

/// The loops running beside one worker.
pub(crate) struct Background {
    tasks: JoinSet<()>,
    stop: CancellationToken,
}

/// What the loops need.
pub(crate) struct BackgroundParams<'a> {
    pub store: &'a Arc<dyn FullStore>,
    pub transport: Option<&'a Arc<dyn Transport>>,
    pub registry: &'a Arc<Registry>,
    pub clock: &'a Arc<dyn Clock>,
    pub config: &'a WorkerConfig,
    pub stats: &'a Arc<Stats>,
    #[cfg_attr(not(feature = "metrics"), allow(dead_code))]
    pub tally: &'a Arc<Tally>,
}

impl Background {
    /// Starts the presence beat, the metrics (feature `metrics`) and, when the worker runs
    /// maintenance, the maintenance loops.
    pub(crate) fn start(p: BackgroundParams<'_>) -> Self {
        let stop = CancellationToken::new();
        let mut tasks = JoinSet::new();
        // This worker's row in `workers`, removed only after the drain, and its kinds' policies
        // in `operation_kinds`, published once.
        tasks.spawn(presence::run(
            p.store.clone(),
            WorkerBeatParams {
                id: p.config.worker_id.clone(),
                host: presence::host_name(),
                pid: std::process::id(),
                kinds: p.registry.names(),
                code_version: p.config.code_version.clone(),
                started_at: p.clock.now(),
            },
            KindPublishParams {
                published_by: p.config.worker_id.clone(),
                code_version: p.config.code_version.clone(),
                kinds: p.registry.kinds().map(Kind::published_policy).collect(),
            },
            declaration(p.registry, &p.config.worker_id),
            stop.clone(),
        ));
        #[cfg(feature = "metrics")]
        {
            tasks.spawn(crate::metrics::counters(
                p.stats.clone(),
                p.tally.clone(),
                stop.clone(),
            ));
            if let Some(every) = p.config.figures_every {
                tasks.spawn(crate::metrics::figures(
                    p.store.clone(),
                    every,
                    stop.clone(),
                ));
            }
        }
        if p.config.run_maintenance {
            tasks.spawn(lead(
                Maintenance {
                    store: p.store.clone(),
                    transport: p.transport.cloned(),
                    registry: p.registry.clone(),
                    clock: p.clock.clone(),
                    config: p.config.clone(),
                    stats: p.stats.clone(),
                    tally: p.tally.clone(),
                },
                stop.clone(),
            ));
        }
        Background { tasks, stop }
    }

    /// Stops every loop and waits for them (the presence row is removed on the way).
    pub(crate) async fn stop(mut self) {
        self.stop.cancel();
        while self.tasks.join_next().await.is_some() {}
    }
}

/// The schedules of the kinds a worker runs, and the kinds it runs without one (whose rows, left
/// by an earlier declaration, are removed).
fn declaration(registry: &Registry, worker_id: &str) -> ScheduleDeclareParams {
    let (scheduled, unscheduled): (Vec<&Kind>, Vec<&Kind>) =
        registry.kinds().partition(|k| k.own_schedule().is_some());
    ScheduleDeclareParams {
        declared_by: worker_id.to_owned(),
        schedules: scheduled
            .into_iter()
            .filter_map(|k| {
                k.own_schedule().map(|s| ScheduleDeclaration {
                    kind: k.name().to_owned(),
                    schedule: s.clone(),
                })
            })
            .collect(),
        unscheduled: unscheduled
            .into_iter()
            .map(|k| k.name().to_owned())
            .collect(),
    }
}

/// What the maintenance loops need, owned.
struct Maintenance {
    store: Arc<dyn FullStore>,
    transport: Option<Arc<dyn Transport>>,
    registry: Arc<Registry>,
    clock: Arc<dyn Clock>,
    config: WorkerConfig,
    stats: Arc<Stats>,
    tally: Arc<Tally>,
}

impl Maintenance {
    /// Starts the loops; they run until `stop`.
    fn start(&self, stop: &CancellationToken) -> JoinSet<()> {
        let mut tasks = JoinSet::new();
        tasks.spawn(rescuer::run(
            self.store.clone(),
            self.config.rescuer.clone(),
            self.stats.clone(),
            self.tally.clone(),
            stop.clone(),
        ));
        tasks.spawn(reconciler::run(
            self.store.clone(),
            self.registry.clone(),
            self.clock.clone(),
            self.config.reconciler.clone(),
            stop.clone(),
        ));
        tasks.spawn(dead_letter::run(
            self.store.clone(),
            self.registry.clone(),
            self.config.alerter.clone(),
            stop.clone(),
        ));
        tasks.spawn(retention::run(
            self.store.clone(),
            self.config.retention.policy_for(&self.registry),
            self.config.retention.clone(),
            self.stats.clone(),
            stop.clone(),
        ));
        tasks.spawn(upkeep::run(
            self.store.clone(),
            self.config.retention.clone(),
            stop.clone(),
        ));
        tasks.spawn(recurring::run(
            self.store.clone(),
            self.transport.clone(),
            self.registry.clone(),
            recurring::TICK_CHECK_EVERY,
            stop.clone(),
        ));
        if let Some(t) = &self.transport {
            tasks.spawn(scheduler::run(
                self.store.clone(),
                t.clone(),
                self.config.scheduler.clone(),
                self.stats.clone(),
                stop.clone(),
            ));
        }
        tasks
    }
}

/// The loops while this process leads.
struct Leading {
    tasks: JoinSet<()>,
    stop: CancellationToken,
}

impl Leading {
    async fn end(mut self) {
        self.stop.cancel();
        while self.tasks.join_next().await.is_some() {}
    }
}

/// Asks for the maintenance leadership every third of its lease until `stop`; runs the
/// maintenance loops while it holds it; gives it up at the end.
async fn lead(m: Maintenance, stop: CancellationToken) {
    let me = m.config.worker_id.clone();
    let lease = m.config.leader_lease;
    let every = (lease / 3)
        .to_std()
        .unwrap_or(Duration::from_secs(2))
        .max(Duration::from_millis(100));
    // Published with the leadership, so that `oprec retention show` previews this policy.
    let settings = Some(m.config.retention.policy_for(&m.registry).to_settings());
    let mut leading: Option<Leading> = None;
    // When this process's own lease runs out, by its own clock: past it, a store that does not
    // answer no longer lets it believe it leads.
    let mut held_until: Option<Instant> = None;
    loop {
        let asked = Instant::now();
        let leads = match m
            .store
            .leader_acquire(LeaderAcquireParams {
                name: MAINTENANCE_LEADER.into(),
                holder: me.clone(),
                lease,
                settings: settings.clone(),
            })
            .await
        {
            Ok(l) if l.holder == me => {
                tracing::debug!(lease_until = %l.lease_until, "the maintenance leadership is ours");
                held_until = Some(asked + lease.to_std().unwrap_or_default());
                true
            }
            Ok(l) => {
                if leading.is_some() {
                    tracing::warn!(leader = %l.holder, "the maintenance leadership passed to another process");
                }
                held_until = None;
                false
            }
            Err(e) => {
                tracing::warn!(error = %e, "asking for the maintenance leadership failed");
                held_until.is_some_and(|t| Instant::now() < t)
            }
        };
        match (leads, leading.take()) {
            (true, None) => {
                tracing::info!(worker = %me, "this process leads maintenance");
                let stop = CancellationToken::new();
                leading = Some(Leading {
                    tasks: m.start(&stop),
                    stop,
                });
            }
            (true, Some(l)) => leading = Some(l),
            (false, Some(l)) => l.end().await,
            (false, None) => {}
        }
        tokio::select! {
            _ = stop.cancelled() => break,
            _ = tokio::time::sleep(every) => {}
        }
    }
    if let Some(l) = leading.take() {
        l.end().await;
        let released = m
            .store
            .leader_release(LeaderReleaseParams {
                name: MAINTENANCE_LEADER.into(),
                holder: me.clone(),
            })
            .await;
        if let Err(e) = released {
            tracing::warn!(error = %e, "giving the maintenance leadership up failed; it lapses with its lease");
        }
    }
}
