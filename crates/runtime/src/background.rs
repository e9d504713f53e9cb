//! What runs beside a worker's handlers: its presence row, its metrics, and the maintenance loops
//! (scheduler, rescuer, reconciler hand-off, dead-letter alerts). Started together and stopped
//! together, after the drain, so that the presence row and the maintenance outlive the last
//! attempt.

use std::sync::Arc;

use oprec_core::{Clock, FullStore, Transport, WorkerBeatParams};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::{Registry, Stats, WorkerConfig, dead_letter, presence, reconciler, rescuer, scheduler};

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
}

impl Background {
    /// Starts the presence beat, the metrics (feature `metrics`) and, when the worker runs
    /// maintenance, the maintenance loops.
    pub(crate) fn start(p: BackgroundParams<'_>) -> Self {
        let stop = CancellationToken::new();
        let mut tasks = JoinSet::new();
        // This worker's row in `workers`, removed only after the drain.
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
            stop.clone(),
        ));
        #[cfg(feature = "metrics")]
        {
            tasks.spawn(crate::metrics::counters(p.stats.clone(), stop.clone()));
            if let Some(every) = p.config.figures_every {
                tasks.spawn(crate::metrics::figures(
                    p.store.clone(),
                    every,
                    stop.clone(),
                ));
            }
        }
        if p.config.run_maintenance {
            tasks.spawn(rescuer::run(
                p.store.clone(),
                p.config.rescuer.clone(),
                p.stats.clone(),
                stop.clone(),
            ));
            tasks.spawn(reconciler::run(
                p.store.clone(),
                p.registry.clone(),
                p.clock.clone(),
                p.config.reconciler.clone(),
                stop.clone(),
            ));
            tasks.spawn(dead_letter::run(
                p.store.clone(),
                p.registry.clone(),
                p.config.alerter.clone(),
                stop.clone(),
            ));
            if let Some(t) = p.transport {
                tasks.spawn(scheduler::run(
                    p.store.clone(),
                    t.clone(),
                    p.config.scheduler.clone(),
                    p.stats.clone(),
                    stop.clone(),
                ));
            }
        }
        Background { tasks, stop }
    }

    /// Stops every loop and waits for them (the presence row is removed on the way).
    pub(crate) async fn stop(mut self) {
        self.stop.cancel();
        while self.tasks.join_next().await.is_some() {}
    }
}
