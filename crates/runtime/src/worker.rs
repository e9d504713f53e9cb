//! The worker process: takes wake-ups (or polls the store when there is no broker, and while the
//! broker does not answer), claims in batches sized by the throughput it achieves (the claim
//! buffer, [`ClaimAhead`]), runs handlers with a concurrency limit, heartbeats every claim it
//! holds in one statement, writes outcomes in batches, and drains on shutdown, giving back the
//! claims it never started.
//!
//! Suspect isolation: an operation whose attempt vanished (a worker died or stalled with it in
//! flight) is a suspect, which the ordinary claims never return. Every second or so the worker
//! asks whether a suspect of its kinds waits; if one does, it stops claiming, lets its running
//! and buffered work finish, then claims suspects one at a time ([`WorkerStore::operation_claim_suspect`])
//! and runs each alone, so that if the process dies again only that operation is to blame. When
//! none is left it claims as before. Without suspects the claim path is unchanged.
//!
//! [`WorkerStore::operation_claim_suspect`]: oprec_core::WorkerStore::operation_claim_suspect Beside it run the loops of `background.rs` (presence, metrics, and on
//! the fleet's leader the maintenance loops).

use std::collections::{HashSet, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::{Duration, Instant};

use futures::stream::{FuturesUnordered, StreamExt};
use oprec_core::store::{
    ClaimByIdsParams, ClaimEligibleParams, ClaimGiveBackParams, ClaimSuspectParams, Claimant,
    CompleteParams, HeldClaim, WorkExistsParams,
};
use oprec_core::{
    ClaimAhead, ClaimAheadRule, Claimed, Clock, FullStore, SystemClock, Transition, Transport,
};
use rand::Rng;
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tokio_util::task::AbortOnDropHandle;

use crate::attempt_span;
use crate::background::{Background, BackgroundParams};
use crate::broker_health::BrokerHealth;
use crate::completer::Completion;
use crate::executor::Executor;
use crate::held::{self, Held, LetGoOnPanic};
use crate::tally::Tally;
use crate::{
    AlerterConfig, ReconcilerConfig, Registry, RescuerConfig, RetentionConfig, SchedulerConfig,
    Stats, StatsSnapshot, completer,
};

/// How a worker runs.
#[derive(Clone, Debug)]
pub struct WorkerConfig {
    /// Handlers running at once.
    pub concurrency: usize,
    /// The claim's lease; heartbeats renew it every third.
    pub lease: chrono::Duration,
    /// The most operations claimed per store call.
    pub claim_batch: usize,
    /// How much work, in time at the completion rate the worker achieves, it claims ahead of
    /// its handlers into its claim buffer (see [`ClaimAhead`]).
    pub claim_ahead: Duration,
    /// The most claimed operations the claim buffer holds, whatever the rate.
    pub claim_ahead_max: usize,
    /// How long one wait for wake-ups (or, poll-only, between empty polls) lasts.
    pub idle_wait: Duration,
    /// On shutdown, how long in-flight attempts may finish before they are released.
    pub drain_timeout: Duration,
    /// This worker's id in claims and history.
    pub worker_id: String,
    /// The application's code version, recorded with each attempt and on the operation, so
    /// that "dead since the deploy of version X" can be asked of the history. It is the version
    /// of the code that runs the handlers, not oprec's: by default the environment variable
    /// `OPREC_CODE_VERSION`, or none.
    pub code_version: Option<String>,
    /// How often the worker asks whether a suspect waits for an isolated attempt (see the
    /// module's documentation).
    pub suspect_probe: Duration,
    /// Scheduler settings (used when there is a transport).
    pub scheduler: SchedulerConfig,
    /// Rescuer settings.
    pub rescuer: RescuerConfig,
    /// Reconciler settings (kinds with a reconcile hook).
    pub reconciler: ReconcilerConfig,
    /// Dead-letter alert settings.
    pub alerter: AlerterConfig,
    /// Retention: how long succeeded and cancelled operations are kept, and the removal's pace.
    pub retention: RetentionConfig,
    /// Whether this process may run the scheduler, rescuer, reconciler and dead-letter alerter:
    /// it then competes for the maintenance leadership, and runs them while it holds it.
    pub run_maintenance: bool,
    /// The maintenance leadership's lease: a leader that dies is replaced once it has run out.
    pub leader_lease: chrono::Duration,
    /// How often the store's figures are read into gauges (feature `metrics`); `None` (the
    /// default) reads none: each read is a stats query.
    #[cfg(feature = "metrics")]
    pub figures_every: Option<Duration>,
}

impl Default for WorkerConfig {
    fn default() -> Self {
        WorkerConfig {
            concurrency: 32,
            lease: chrono::Duration::seconds(30),
            claim_batch: 1000,
            claim_ahead: Duration::from_secs(1),
            claim_ahead_max: 2000,
            idle_wait: Duration::from_millis(500),
            drain_timeout: Duration::from_secs(20),
            worker_id: format!(
                "{}-{}",
                std::env::var("HOSTNAME").unwrap_or_else(|_| "worker".into()),
                std::process::id()
            ),
            code_version: code_version_from_env(),
            suspect_probe: Duration::from_secs(1),
            scheduler: SchedulerConfig::default(),
            rescuer: RescuerConfig::default(),
            reconciler: ReconcilerConfig::default(),
            alerter: AlerterConfig::default(),
            retention: RetentionConfig::default(),
            run_maintenance: true,
            leader_lease: chrono::Duration::seconds(6),
            #[cfg(feature = "metrics")]
            figures_every: None,
        }
    }
}

/// The shortest lease a worker accepts: a heartbeat every third of it must reach the store in
/// time, or claims are lost while their handlers run.
pub const MIN_LEASE: chrono::Duration = chrono::Duration::seconds(1);

/// The longest lease a worker accepts: a worker that dies holds its claims this long before the
/// rescuer takes them back.
pub const MAX_LEASE: chrono::Duration = chrono::Duration::hours(24);

/// The environment variable naming the application's code version ([`WorkerConfig::code_version`]).
pub const CODE_VERSION_ENV: &str = "OPREC_CODE_VERSION";

/// The application's code version from [`CODE_VERSION_ENV`], if set and not blank.
pub fn code_version_from_env() -> Option<String> {
    std::env::var(CODE_VERSION_ENV)
        .ok()
        .map(|v| v.trim().to_owned())
        .filter(|v| !v.is_empty())
}

impl WorkerConfig {
    /// Refuses settings a worker cannot run with: a lease outside [`MIN_LEASE`]..=[`MAX_LEASE`]
    /// (too short, heartbeats cannot keep it; too long, a crashed worker's claims wait for days)
    /// and a zero probe interval.
    pub fn validate(&self) -> oprec_core::Result<()> {
        let invalid = |m: String| Err(oprec_core::Error::InvalidInput(m));
        if self.lease < MIN_LEASE || self.lease > MAX_LEASE {
            return invalid(format!(
                "the lease must be between {} s and {} h; got {} ms",
                MIN_LEASE.num_seconds(),
                MAX_LEASE.num_hours(),
                self.lease.num_milliseconds()
            ));
        }
        if self.suspect_probe.is_zero() {
            return invalid("the suspect probe interval must be positive".to_owned());
        }
        Ok(())
    }
}

/// Takes wake-ups and runs operations until told to stop.
pub struct Worker {
    store: Arc<dyn FullStore>,
    transport: Option<Arc<dyn Transport>>,
    registry: Arc<Registry>,
    clock: Arc<dyn Clock>,
    config: WorkerConfig,
    stats: Arc<Stats>,
    /// The labelled counts, bounded by the registry's kinds and dependencies.
    tally: Arc<Tally>,
    /// Failed transport or store calls in a row, for the back-off.
    failures: AtomicU32,
    broker: BrokerHealth,
    /// Whether the broker had a backlog of this worker's wake-ups at the last look (its last
    /// delivery batch was full); assumed until a batch says otherwise. While it has one, each
    /// claim first takes from the store what goes ahead of it ([`Worker::claim_ahead_of_wakeups`]).
    backlog: AtomicBool,
    /// Until when the claim ahead of the wake-ups is not made again, after one that found
    /// nothing ([`AHEAD_QUIET`]).
    ahead_quiet_until: std::sync::Mutex<Option<Instant>>,
}

/// After a claim ahead of the wake-ups that found nothing, how long the next claims go straight
/// to the broker: the look then costs a backlogged worker at most one short read-only
/// transaction per interval instead of one per claim, and a high-priority operation waits at
/// most this much longer (its worker's claim-ahead buffer holds about a second of work anyway).
/// Measured (BENCHMARKS.md, "Priorities with a broker"): a look before every claim, or after
/// 50 ms, slowed the Redis drain by about 13%; after 250 ms by nothing measurable.
const AHEAD_QUIET: Duration = Duration::from_millis(250);

impl std::fmt::Debug for Worker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Worker")
            .field("kinds", &self.registry.names())
            .field("transport", &self.transport.as_ref().map(|t| t.name()))
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// What a run did, once it stopped.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct RunReport {
    /// The counters at the end.
    pub stats: StatsSnapshot,
    /// In-flight attempts released unfinished at the drain timeout.
    pub released: u64,
    /// Claims never started, given back on shutdown with their attempts refunded.
    pub given_back: u64,
    /// The run stopped because there was no work left ([`Worker::run_until_idle`]), not because
    /// it was told to.
    pub idle: bool,
}

/// Claims asked for at once: two with a transport whose receives overlap
/// ([`Transport::overlapping_receives`]: Redis, in-memory; also while the worker polls the store
/// during that broker's outage), else one. The handlers never wait for a claim: they take from
/// the claim buffer, which [`ClaimAhead`] keeps filled ahead of them. A second claim in flight
/// overlaps the first's broker round trips (read, claim, acknowledge) where each read gets
/// wake-ups of its own; elsewhere it cost the store more and gave the handlers nothing: polling,
/// it walked past every row the first held locked (`SKIP LOCKED` fetches each before skipping
/// it); on AMQP the two split the prefetch window, so each claim carried fewer (0.007-0.008
/// commits per operation instead of 0.004-0.005). Measured one against two, alternately, four
/// runs each (BENCHMARKS.md, "Figures, 2026-12-05"): AMQP drains 18,785-20,700 → 22,377-26,434
/// ops/s, poll-only 26,505-30,563 → 27,693-32,564, Redis 26,318-27,476 → 24,365-27,032 (so
/// Redis keeps two).
fn claims_in_flight(transport: Option<&dyn Transport>) -> usize {
    match transport {
        Some(t) if t.overlapping_receives() => 2,
        _ => 1,
    }
}

/// A claim in flight: what it claimed, and how many it asked for.
type ClaimFuture<'a> =
    Pin<Box<dyn Future<Output = (Vec<Claimed>, usize, tracing::Span)> + Send + 'a>>;

/// How many times giving back the buffered claims on shutdown is tried before they are left to
/// the rescuer.
const GIVE_BACK_TRIES: u32 = 3;

impl Worker {
    /// A worker over `store`; with a transport it consumes wake-ups, without one it polls.
    ///
    /// # Panics
    ///
    /// When [`WorkerConfig::validate`] refuses `config`; [`Worker::try_new`] returns the error
    /// instead.
    pub fn new(
        store: Arc<dyn FullStore>,
        transport: Option<Arc<dyn Transport>>,
        registry: Arc<Registry>,
        config: WorkerConfig,
    ) -> Self {
        match Self::try_new(store, transport, registry, config) {
            Ok(w) => w,
            Err(e) => panic!("invalid worker configuration: {e}"),
        }
    }

    /// A worker over `store`, or the reason [`WorkerConfig::validate`] refuses `config`.
    pub fn try_new(
        store: Arc<dyn FullStore>,
        transport: Option<Arc<dyn Transport>>,
        registry: Arc<Registry>,
        config: WorkerConfig,
    ) -> oprec_core::Result<Self> {
        config.validate()?;
        Ok(Worker {
            tally: Arc::new(Tally::for_registry(&registry)),
            store,
            transport,
            registry,
            clock: Arc::new(SystemClock),
            config,
            stats: Arc::new(Stats::default()),
            failures: AtomicU32::new(0),
            broker: BrokerHealth::default(),
            backlog: AtomicBool::new(true),
            ahead_quiet_until: std::sync::Mutex::new(None),
        })
    }

    /// Uses `clock` for policy decisions.
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// The live counters (shared; read them while the worker runs).
    pub fn stats(&self) -> Arc<Stats> {
        self.stats.clone()
    }

    fn claimant(&self) -> Claimant {
        Claimant {
            worker_id: self.config.worker_id.clone(),
            code_version: self.config.code_version.clone(),
            lease: self.config.lease,
        }
    }

    /// Runs until `shutdown` is cancelled or, earlier, until no operation of this worker's kinds
    /// has been running, or pending, eligible and held back by no control, for `quiet_for`; then
    /// drains as [`Worker::run`] does. For tests, batch jobs and examples: work enqueued by other
    /// processes counts too.
    pub async fn run_until_idle(
        self,
        quiet_for: Duration,
        shutdown: CancellationToken,
    ) -> RunReport {
        let idle = CancellationToken::new();
        let stop = shutdown.child_token();
        let watcher = tokio::spawn({
            let (store, kinds, idle, stop) = (
                self.store.clone(),
                self.registry.names(),
                idle.clone(),
                stop.clone(),
            );
            async move {
                crate::idle::wait_until_idle(store, kinds, quiet_for).await;
                idle.cancel();
                stop.cancel();
            }
        });
        let mut report = self.run(stop).await;
        watcher.abort();
        report.idle = idle.is_cancelled();
        report
    }

    /// Runs until `shutdown` is cancelled, then drains: stops taking work, gives back the claims
    /// waiting in the buffer (attempts refunded), lets in-flight attempts finish up to the drain
    /// timeout, releases the rest, and writes every outcome.
    ///
    /// The loop runs as a task of the caller's runtime, whatever thread awaits this: awaited on
    /// the thread that started the runtime (`block_on`, `#[tokio::main]`), it was woken across
    /// threads by every attempt that finished (a futex wake and a context switch each) and waited
    /// for a core behind the database's backends; as a task it is woken on the thread where its
    /// handlers run. A worker draining 200,000 no-op operations at 32 handlers made a third of
    /// the context switches, used a quarter less CPU and ran 1.07-1.19 times as fast
    /// (BENCHMARKS.md, "Figures, 2026-12-05: the worker's loop on the runtime"). Dropping the
    /// returned future stops the loop (the task is aborted with its handle), as before; a panic
    /// in it reaches the caller.
    pub async fn run(self, shutdown: CancellationToken) -> RunReport {
        match AbortOnDropHandle::new(tokio::spawn(self.run_loop(shutdown))).await {
            Ok(report) => report,
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            // Aborted only by the handle's drop, after which nobody awaits.
            Err(e) => unreachable!("the worker's loop was cancelled while awaited: {e}"),
        }
    }

    async fn run_loop(self, shutdown: CancellationToken) -> RunReport {
        let (tx, rx) = mpsc::unbounded_channel::<Completion>();
        let completer = tokio::spawn(completer::run(
            self.store.clone(),
            rx,
            self.stats.clone(),
            self.tally.clone(),
        ));
        let background = Background::start(BackgroundParams {
            store: &self.store,
            transport: self.transport.as_ref(),
            registry: &self.registry,
            clock: &self.clock,
            config: &self.config,
            stats: &self.stats,
            tally: &self.tally,
        });
        let executor = Arc::new(Executor {
            store: self.store.clone(),
            registry: self.registry.clone(),
            clock: self.clock.clone(),
            stats: self.stats.clone(),
            tally: self.tally.clone(),
            completions: tx.clone(),
            worker_id: self.config.worker_id.clone(),
            code_version: self.config.code_version.clone(),
        });
        let held = Held::default();
        let stop_heartbeat = CancellationToken::new();
        let heartbeat = tokio::spawn(held::heartbeat(
            self.store.clone(),
            held.clone(),
            self.config.lease,
            (self.config.lease / 3)
                .to_std()
                .unwrap_or(Duration::from_secs(10)),
            stop_heartbeat.clone(),
        ));
        let concurrency = self.config.concurrency.max(1);
        let mut ahead = ClaimAhead::new(ClaimAheadRule {
            concurrency,
            horizon: self.config.claim_ahead,
            max_buffered: self.config.claim_ahead_max,
            max_per_claim: self.config.claim_batch.max(1),
        });
        // Each claimed operation waits with its lease's loss signal and its claim batch's span.
        let mut buffer: VecDeque<(Claimed, CancellationToken, tracing::Span)> = VecDeque::new();
        let mut asked = 0usize;
        let mut done = 0u64;
        let mut observed_at = Instant::now();
        let mut tasks = JoinSet::new();
        let kinds = self.registry.names();
        let mut claims: FuturesUnordered<ClaimFuture<'_>> = FuturesUnordered::new();
        let (this, kinds_ref, stop) = (&self, &kinds, &shutdown);
        // Suspect isolation: the probe raises `suspects`; the loop then stops claiming, runs its
        // work down, and runs suspects one at a time while `isolating`.
        let suspects = Arc::new(AtomicBool::new(false));
        let stop_probe = CancellationToken::new();
        let probe = tokio::spawn(probe_suspects(
            self.store.clone(),
            kinds.clone(),
            self.config.suspect_probe,
            suspects.clone(),
            stop_probe.clone(),
        ));
        let mut isolating = false;
        let in_flight = claims_in_flight(self.transport.as_deref());

        loop {
            while tasks.try_join_next().is_some() {
                done += 1;
            }
            if !isolating && suspects.load(Ordering::Relaxed) {
                isolating = true;
                tracing::info!("a suspect waits: running this worker's work down to run it alone");
            }
            let now = Instant::now();
            ahead.observe(std::mem::take(&mut done), now - observed_at);
            observed_at = now;
            // Free handlers take from the buffer, skipping claims whose lease was lost.
            while !shutdown.is_cancelled() && tasks.len() < concurrency {
                let Some((op, lost, claim_span)) = buffer.pop_front() else {
                    break;
                };
                let claim = HeldClaim::from(&op);
                if lost.is_cancelled() {
                    held.remove(claim);
                    Stats::add(&self.stats.stale_claims, 1);
                    continue;
                }
                let (executor, held) = (executor.clone(), held.clone());
                tasks.spawn(async move {
                    let _panic = LetGoOnPanic {
                        held: held.clone(),
                        claim,
                    };
                    let let_go = {
                        let held = held.clone();
                        Arc::new(move || held.remove(claim))
                    };
                    executor.execute(op, lost, let_go, claim_span).await;
                    held.remove(claim);
                });
            }
            if shutdown.is_cancelled() && claims.is_empty() {
                break;
            }
            if isolating
                && !shutdown.is_cancelled()
                && claims.is_empty()
                && buffer.is_empty()
                && tasks.is_empty()
            {
                // Nothing else runs here: the next suspect runs alone, or isolation ends. First
                // every finished attempt's outcome is written, so that a suspect that kills the
                // process takes no finished attempt down with it.
                completer::flush(&tx).await;
                let started = Instant::now();
                match self.claim_suspect(kinds_ref, stop).await {
                    Some(op) => {
                        let claim_span =
                            attempt_span::claim_batch("suspect", 1, 1, started.elapsed());
                        tracing::info!(operation = %op.id, kind = %op.kind, attempt = op.attempt,
                            "running a suspect alone (isolated attempt)");
                        let lost = held.insert(HeldClaim::from(&op), self.tally.labels(&op));
                        buffer.push_back((op, lost, claim_span));
                    }
                    None => {
                        isolating = false;
                        suspects.store(false, Ordering::Relaxed);
                    }
                }
                continue;
            }
            if !shutdown.is_cancelled() && !isolating && claims.len() < in_flight {
                let want = ahead.to_claim(tasks.len(), buffer.len(), asked);
                if want > 0 {
                    asked += want;
                    claims.push(Box::pin(async move {
                        // Without a broker, or while it does not answer, claim from the store.
                        let started = Instant::now();
                        let (claimed, source) = match &this.transport {
                            Some(t) if this.broker.ask_broker() => (
                                this.take_wakeups(t.as_ref(), want, kinds_ref, stop).await,
                                "wake-ups",
                            ),
                            _ => (this.poll(want, kinds_ref, stop).await, "poll"),
                        };
                        let span = attempt_span::claim_batch(
                            source,
                            want,
                            claimed.len(),
                            started.elapsed(),
                        );
                        (claimed, want, span)
                    }));
                    continue;
                }
            }
            tokio::select! {
                Some((claimed, want, span)) = claims.next(), if !claims.is_empty() => {
                    asked -= want;
                    for op in claimed {
                        let lost = held.insert(HeldClaim::from(&op), self.tally.labels(&op));
                        buffer.push_back((op, lost, span.clone()));
                    }
                }
                Some(_) = tasks.join_next(), if !tasks.is_empty() => done += 1,
                () = shutdown.cancelled(), if !shutdown.is_cancelled() => {}
                else => break,
            }
        }

        // Drain: first give back what never started, then let the running attempts finish.
        // A buffered claim whose lease was lost is let go, not given back: it is not ours.
        let mut unstarted: Vec<HeldClaim> = Vec::with_capacity(buffer.len());
        for (op, lost, _) in buffer.drain(..) {
            let claim = HeldClaim::from(&op);
            held.remove(claim);
            if lost.is_cancelled() {
                Stats::add(&self.stats.stale_claims, 1);
            } else {
                unstarted.push(claim);
            }
        }
        let given_back = self.give_back(unstarted).await;
        let drained = tokio::time::timeout(self.config.drain_timeout, async {
            while tasks.join_next().await.is_some() {}
        })
        .await;
        if drained.is_err() {
            let mut released = 0;
            tasks.abort_all();
            while tasks.join_next().await.is_some() {}
            let now = self.clock.now();
            for (claim, labels) in held.take_all() {
                released += 1;
                let _ = tx.send(Completion::Outcome(
                    CompleteParams {
                        id: claim.id,
                        claim_token: claim.claim_token,
                        transition: Transition::release(now),
                    },
                    labels,
                    tracing::Span::none(),
                ));
            }
            tracing::info!(released, "drain timeout: releasing unfinished attempts");
        }
        stop_heartbeat.cancel();
        let _ = heartbeat.await;
        stop_probe.cancel();
        let _ = probe.await;
        drop(tx);
        drop(executor);
        let _ = completer.await;
        background.stop().await;
        let stats = self.stats.snapshot();
        RunReport {
            stats,
            // Those written: a release the fence refused counts as a stale claim.
            released: stats.released,
            given_back,
            idle: false,
        }
    }

    /// Claims one suspect to run alone; `None` when none waits (or the store failed, after a
    /// pause).
    async fn claim_suspect(
        &self,
        kinds: &[String],
        shutdown: &CancellationToken,
    ) -> Option<Claimed> {
        match self
            .store
            .operation_claim_suspect(ClaimSuspectParams {
                kinds: kinds.to_vec(),
                claimant: self.claimant(),
            })
            .await
        {
            Ok(Some(op)) => {
                self.recovered();
                Stats::add(&self.stats.claimed, 1);
                self.tally.claimed(std::slice::from_ref(&op));
                Stats::add(&self.stats.isolated, 1);
                Some(op)
            }
            Ok(None) => {
                self.recovered();
                None
            }
            Err(e) => {
                tracing::warn!(error = %e, "claiming a suspect failed");
                self.pause(shutdown).await;
                None
            }
        }
    }

    /// Gives back claims that never started, at once, with their attempts refunded; after a few
    /// failed tries they are left to the rescuer, as a crash would leave them.
    async fn give_back(&self, claims: Vec<HeldClaim>) -> u64 {
        if claims.is_empty() {
            return 0;
        }
        let mut wait = Duration::from_millis(100);
        for attempt in 1..=GIVE_BACK_TRIES {
            match self
                .store
                .operation_claim_give_back(ClaimGiveBackParams {
                    claims: claims.clone(),
                })
                .await
            {
                Ok(given) => {
                    let n = given.len() as u64;
                    Stats::add(&self.stats.given_back, n);
                    tracing::info!(given_back = n, "shutdown: gave back unstarted claims");
                    return n;
                }
                Err(e) if attempt < GIVE_BACK_TRIES => {
                    tracing::warn!(error = %e, "giving back unstarted claims failed; retrying");
                    tokio::time::sleep(wait).await;
                    wait *= 2;
                }
                Err(e) => {
                    tracing::warn!(error = %e, claims = claims.len(),
                        "giving back unstarted claims failed; the rescuer takes them once their leases expire");
                }
            }
        }
        0
    }

    /// While the broker has a backlog of this worker's wake-ups, claims first from the store
    /// what priority puts ahead of it: the aged operations (the starvation guard), then those
    /// above the default priority, up to `max`. A wake-up waits behind every wake-up published
    /// before it, so without this a high-priority operation would wait for the whole backlog;
    /// its own wake-up, when it comes, finds it claimed and has no effect. Without a backlog the
    /// next delivery batch holds every wake-up there is, the high-priority ones included, and
    /// nothing is asked of the store; after a look that found nothing, neither is it for
    /// [`AHEAD_QUIET`].
    async fn claim_ahead_of_wakeups(&self, max: usize, kinds: &[String]) -> Vec<Claimed> {
        if !self.backlog.load(Ordering::Relaxed) {
            return Vec::new();
        }
        let quiet_until = || {
            self.ahead_quiet_until
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
        };
        let now = Instant::now();
        if quiet_until().is_some_and(|until| now < until) {
            return Vec::new();
        }
        match self
            .store
            .operation_claim_eligible(ClaimEligibleParams {
                kinds: kinds.to_vec(),
                limit: max as u32,
                claimant: self.claimant(),
                above_default_only: true,
            })
            .await
        {
            Ok(claimed) => {
                *quiet_until() = claimed.is_empty().then(|| now + AHEAD_QUIET);
                Stats::add(&self.stats.claimed_ahead, claimed.len() as u64);
                self.count_claims(&claimed);
                claimed
            }
            Err(e) => {
                // The claim through the wake-ups that follows meets the same store and pauses.
                *quiet_until() = Some(now + AHEAD_QUIET);
                tracing::warn!(error = %e, "claiming ahead of the wake-ups failed");
                Vec::new()
            }
        }
    }

    /// Receives up to `max` wake-ups of this worker's kinds (the others stay on the broker for the
    /// workers that run them), claims the operations they name, acknowledges them all; while the
    /// broker has a backlog, what priority puts ahead of it is claimed from the store first and
    /// counts against `max`.
    async fn take_wakeups(
        &self,
        t: &dyn Transport,
        max: usize,
        kinds: &[String],
        shutdown: &CancellationToken,
    ) -> Vec<Claimed> {
        let mut claimed = self.claim_ahead_of_wakeups(max, kinds).await;
        let max = max - claimed.len();
        if max == 0 {
            return claimed;
        }
        let deliveries = tokio::select! {
            _ = shutdown.cancelled() => return claimed,
            r = t.receive(kinds, max, self.config.idle_wait) => r,
        };
        let deliveries = match deliveries {
            Ok(d) => {
                self.recovered();
                self.broker.answered(t.name());
                self.backlog.store(d.len() >= max, Ordering::Relaxed);
                d
            }
            Err(e) => {
                // Every operation is in the store: poll it until the broker answers again.
                self.broker.failed(&e, t.name());
                claimed.extend(self.poll(max, kinds, shutdown).await);
                return claimed;
            }
        };
        if deliveries.is_empty() {
            return claimed;
        }
        Stats::add(&self.stats.wakeups_received, deliveries.len() as u64);
        let mut ids = Vec::with_capacity(deliveries.len());
        let mut seen = HashSet::with_capacity(deliveries.len());
        for d in &deliveries {
            match &d.frame {
                Ok(id) => {
                    if seen.insert(*id) {
                        ids.push(*id);
                    } else {
                        Stats::add(&self.stats.wakeups_ignored, 1);
                    }
                }
                Err(e) => {
                    Stats::add(&self.stats.garbage_frames, 1);
                    tracing::warn!(error = %e, transport = t.name(), "garbage frame acknowledged and dropped");
                }
            }
        }
        let woken = if ids.is_empty() {
            Vec::new()
        } else {
            match self
                .store
                .operation_claim_by_ids(ClaimByIdsParams {
                    ids: ids.clone(),
                    kinds: kinds.to_vec(),
                    claimant: self.claimant(),
                })
                .await
            {
                Ok(c) => c,
                Err(e) => {
                    // Acknowledge anyway: the rows are the intent, and the scheduler wakes them
                    // again after the re-wake interval. Holding the deliveries unacknowledged
                    // would only pin the broker's prefetch window while the database is away.
                    tracing::warn!(error = %e, "claiming failed; the scheduler will wake these again");
                    if let Err(e) = t.ack(deliveries.into_iter().map(|d| d.ack).collect()).await {
                        tracing::warn!(error = %e, "acknowledging wake-ups failed");
                    }
                    self.pause(shutdown).await;
                    return claimed;
                }
            }
        };
        self.count_claims(&woken);
        Stats::add(
            &self.stats.wakeups_ignored,
            (ids.len() - woken.len()) as u64,
        );
        if let Err(e) = t.ack(deliveries.into_iter().map(|d| d.ack).collect()).await {
            tracing::warn!(error = %e, "acknowledging wake-ups failed; duplicates will be ignored");
        }
        claimed.extend(woken);
        claimed
    }

    /// Poll-only: claims eligible operations straight from the store.
    async fn poll(
        &self,
        max: usize,
        kinds: &[String],
        shutdown: &CancellationToken,
    ) -> Vec<Claimed> {
        match self
            .store
            .operation_claim_eligible(ClaimEligibleParams {
                above_default_only: false,
                kinds: kinds.to_vec(),
                limit: max as u32,
                claimant: self.claimant(),
            })
            .await
        {
            Ok(claimed) if !claimed.is_empty() => {
                self.recovered();
                self.count_claims(&claimed);
                claimed
            }
            Ok(_) => {
                self.recovered();
                tokio::select! {
                    _ = shutdown.cancelled() => {}
                    _ = tokio::time::sleep(self.config.idle_wait) => {}
                }
                Vec::new()
            }
            Err(e) => {
                tracing::warn!(error = %e, "polling the store failed");
                self.pause(shutdown).await;
                Vec::new()
            }
        }
    }

    /// Counts claims in the worker's counters and its labelled tally.
    fn count_claims(&self, claimed: &[Claimed]) {
        Stats::add(&self.stats.claimed, claimed.len() as u64);
        self.tally.claimed(claimed);
    }

    /// Waits before trying the transport or the store again after a failure: up to 100 ms after
    /// the first, doubling with each failure in a row up to 1 s, drawn with jitter so that a
    /// fleet that lost its broker together does not come back in step; a success resets it.
    async fn pause(&self, shutdown: &CancellationToken) {
        let streak = self.failures.fetch_add(1, Ordering::Relaxed).min(4);
        let ceiling = Duration::from_millis(100 * (1 << streak)).min(Duration::from_secs(1));
        let wait = ceiling.mul_f64(rand::rng().random_range(0.5..1.0));
        tokio::select! {
            _ = shutdown.cancelled() => {}
            _ = tokio::time::sleep(wait) => {}
        }
    }

    /// A call succeeded: the next failure waits the shortest pause again.
    fn recovered(&self) {
        self.failures.store(0, Ordering::Relaxed);
    }
}

/// Asks every `every` whether a suspect of `kinds` waits, and raises `suspects` when one does
/// (the worker lowers it once it finds none left to claim). A store error is logged and asked
/// again at the next beat.
async fn probe_suspects(
    store: Arc<dyn FullStore>,
    kinds: Vec<String>,
    every: Duration,
    suspects: Arc<AtomicBool>,
    stop: CancellationToken,
) {
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(every) => {}
        }
        if suspects.load(Ordering::Relaxed) {
            continue;
        }
        match store
            .operation_suspect_exists(WorkExistsParams {
                kinds: kinds.clone(),
            })
            .await
        {
            Ok(true) => suspects.store(true, Ordering::Relaxed),
            Ok(false) => {}
            Err(e) => tracing::warn!(error = %e, "asking for suspects failed"),
        }
    }
}
