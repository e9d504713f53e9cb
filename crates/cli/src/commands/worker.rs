//! `oprec worker`: runs `oprec::Worker` (worker, scheduler, rescuer, reconciler and dead-letter
//! alerter) with the demo kinds and/or the kinds a `--kinds-file` declares until SIGTERM or
//! ctrl-c, then drains and prints a summary of the run. A second signal stops at once. `--metrics-listen` serves Prometheus metrics meanwhile.

use std::sync::Arc;
use std::time::Duration;

use oprec::runtime::{
    AlerterConfig, DeadLetterSink, ReconcilerConfig, RescuerConfig, RetentionConfig,
    SchedulerConfig, WebhookSink,
};
use oprec::{Registry, VanishRule, Worker, WorkerConfig};
use tokio_util::sync::CancellationToken;

use crate::backend::{self, Backend};
use crate::cli::{Global, WorkerArgs};
use crate::demo_kinds::{self, DemoPolicy, EffectTable};
use crate::exit::bad;
use crate::{duration, kinds_file, metrics, output};

/// How long `--exit-when-idle` waits with nothing to do.
const IDLE_FOR: Duration = Duration::from_secs(2);

/// The worker's settings from the flags; every bad value is bad input.
fn config(args: &WorkerArgs) -> anyhow::Result<(WorkerConfig, DemoPolicy)> {
    if args.concurrency == 0 {
        return Err(bad("--concurrency must be at least 1"));
    }
    if args.vanish_limit == 0 {
        return Err(bad("--vanish-limit must be at least 1"));
    }
    let lease = duration::parse_positive("--lease", &args.lease)?;
    if lease < oprec::runtime::MIN_LEASE || lease > oprec::runtime::MAX_LEASE {
        return Err(bad(format!(
            "--lease must be between {}s and {}h (got {}): shorter, heartbeats cannot keep it; \
             longer, a crashed worker's claims wait that long",
            oprec::runtime::MIN_LEASE.num_seconds(),
            oprec::runtime::MAX_LEASE.num_hours(),
            args.lease
        )));
    }
    let drain_timeout = duration::parse("--drain-timeout", &args.drain_timeout)?;
    let claim_ahead = duration::parse("--claim-ahead", &args.claim_ahead)?;
    let rewake_after = duration::parse("--rewake-after", &args.rewake_after)?;
    let mut policy = DemoPolicy::default();
    if let Some(ladder) = &args.demo_ladder {
        policy.ladder = duration::ladder("--demo-ladder", ladder)?;
    }
    if let Some(n) = args.demo_max_attempts {
        if n == 0 {
            return Err(bad("--demo-max-attempts must be at least 1"));
        }
        policy.max_attempts = Some(n);
    }
    if let Some(t) = &args.demo_timeout {
        policy.timeout = duration::parse_positive("--demo-timeout", t)?;
    }
    let reconcile_every =
        duration::parse_positive("--reconcile-interval", &args.reconcile_interval)?
            .to_std()
            .unwrap_or(Duration::from_secs(5));
    let mut alerter = AlerterConfig::default();
    if let Some(url) = &args.dead_letter_webhook {
        let sink = WebhookSink::new(url).map_err(|e| bad(format!("--dead-letter-webhook: {e}")))?;
        // Beside the tracing event, not instead of it.
        alerter
            .default_sinks
            .push(Arc::new(sink) as Arc<dyn DeadLetterSink>);
    }
    for route in args.alert_routes.iter().filter(|r| !r.trim().is_empty()) {
        let (scope, name, url) = alert_route(route)?;
        let sink: Arc<dyn DeadLetterSink> = Arc::new(
            WebhookSink::new(url).map_err(|e| bad(format!("--alert-route {scope}:{name}: {e}")))?,
        );
        let routes = match scope {
            "kind" => &mut alerter.routes.kinds,
            _ => &mut alerter.routes.dependencies,
        };
        routes.entry(name.to_owned()).or_default().push(sink);
    }
    alerter.pause_on_configuration = args.pause_on_configuration;
    let defaults = WorkerConfig::default();
    // Look for expired leases a few times per lease, so a crashed attempt is retried promptly.
    let rescue_every = (lease / 3)
        .to_std()
        .unwrap_or(Duration::from_secs(5))
        .clamp(Duration::from_millis(100), Duration::from_secs(5));
    let config = WorkerConfig {
        concurrency: args.concurrency,
        lease,
        drain_timeout: drain_timeout.to_std().unwrap_or_default(),
        claim_ahead: claim_ahead.to_std().unwrap_or_default(),
        claim_ahead_max: args.claim_ahead_max,
        code_version: args
            .code_version
            .as_deref()
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .map(str::to_owned),
        scheduler: SchedulerConfig {
            rewake_after,
            ..SchedulerConfig::default()
        },
        rescuer: RescuerConfig {
            interval: rescue_every,
            rule: VanishRule {
                vanish_limit: args.vanish_limit,
                ..VanishRule::default()
            },
            ..RescuerConfig::default()
        },
        reconciler: ReconcilerConfig {
            interval: reconcile_every,
            ..ReconcilerConfig::default()
        },
        alerter,
        retention: RetentionConfig {
            policy: args.retention.policy()?,
            vacuum: args.vacuum == "auto",
            ..RetentionConfig::default()
        },
        ..defaults
    };
    Ok((config, policy))
}

/// Reads `kind:NAME=URL` or `dependency:NAME=URL`; a mistake never prints the URL (it may
/// carry a secret).
fn alert_route(route: &str) -> anyhow::Result<(&str, &str, &str)> {
    let usage = "--alert-route takes kind:NAME=URL or dependency:NAME=URL";
    let (target, url) = route
        .split_once('=')
        .ok_or_else(|| bad(format!("{usage} (no '=' in the value)")))?;
    let (scope, name) = target
        .split_once(':')
        .ok_or_else(|| bad(format!("{usage} (no scope before the name)")))?;
    if !matches!(scope, "kind" | "dependency") {
        return Err(bad(format!(
            "{usage} (scope {scope:?} is neither kind nor dependency)"
        )));
    }
    if name.trim().is_empty() || url.trim().is_empty() {
        return Err(bad(format!("{usage} (empty name or URL)")));
    }
    Ok((scope, name, url))
}

/// Cancels `stop` on the first SIGTERM or ctrl-c; exits at once on the second.
async fn on_signals(stop: CancellationToken) {
    #[cfg(unix)]
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
    for n in 0.. {
        #[cfg(unix)]
        let terminated = async {
            match term.as_mut() {
                Some(t) => {
                    t.recv().await;
                }
                None => std::future::pending::<()>().await,
            }
        };
        #[cfg(not(unix))]
        let terminated = std::future::pending::<()>();
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = terminated => {}
        }
        if n == 0 {
            crate::logging::notice(
                "oprec::worker",
                "oprec worker: draining (a second signal stops at once)",
            );
            stop.cancel();
        } else {
            crate::logging::notice(
                "oprec::worker",
                "oprec worker: second signal, stopping without waiting for the drain",
            );
            std::process::exit(1);
        }
    }
}

/// Runs the worker until a signal (or, with `--exit-when-idle`, until idle).
pub(crate) async fn run(global: &Global, args: WorkerArgs) -> anyhow::Result<()> {
    let (mut config, policy) = config(&args)?;
    let metrics_at = args
        .metrics_listen
        .as_deref()
        .map(metrics::address)
        .transpose()?;
    if !args.demo && args.kinds_file.is_none() {
        return Err(bad(
            "nothing to run; pass --demo (the demo kinds), --kinds-file FILE (kinds declared in \
             a file, run by an HTTP handler), or both",
        ));
    }
    let policy = policy.retry_policy()?;
    // The file first: a mistake in it (or a variable its headers name and the environment
    // lacks) stops the worker before it connects to anything.
    let declared = match &args.kinds_file {
        Some(path) => {
            let file = kinds_file::load(path)?;
            let kinds = kinds_file::worker_kinds(&file)?;
            Some((file, kinds))
        }
        None => None,
    };
    let backend = Backend::open(global).await?;
    backend.ensure_schema().await?;
    let mut registry = Registry::new();
    if args.demo {
        let effects = EffectTable::new(&backend.concrete);
        effects.ensure().await?;
        registry = demo_kinds::registry(&policy, effects);
    }
    if let Some((file, kinds)) = declared {
        crate::logging::notice(
            "oprec::worker",
            &format!(
                "oprec worker: {} kind{} from {}: {}",
                kinds.len(),
                if kinds.len() == 1 { "" } else { "s" },
                file.file(),
                file.names().join(", ")
            ),
        );
        for kind in kinds {
            registry = registry.register(kind);
        }
    }
    if !args.kinds.is_empty() {
        registry = registry.only(&args.kinds).map_err(|e| match e {
            oprec::Error::InvalidInput(why) => bad(format!("--kinds: {why}")),
            other => other.into(),
        })?;
    }
    let registry = Arc::new(registry);
    let transport = backend::transport(&global.transport)?;
    let worker_id = config.worker_id.clone();
    if let Some(addr) = metrics_at {
        metrics::install(addr)?;
        config.figures_every = Some(metrics::EVERY);
        crate::logging::notice(
            "oprec::worker",
            &format!(
                "oprec worker {worker_id}: serving Prometheus metrics on http://{addr}/metrics"
            ),
        );
    }
    let worker = Worker::new(backend.store.clone(), transport, registry.clone(), config);

    let stop = CancellationToken::new();
    tokio::spawn(on_signals(stop.clone()));
    for route in args.alert_routes.iter().filter(|r| !r.trim().is_empty()) {
        if let Ok((scope, name, url)) = alert_route(route) {
            crate::logging::notice(
                "oprec::worker",
                &format!(
                    "oprec worker {worker_id}: alerts of {scope} {name} go to {}",
                    oprec::url_origin(url)
                ),
            );
        }
    }
    if let Some(url) = &args.dead_letter_webhook {
        crate::logging::notice(
            "oprec::worker",
            &format!(
                "oprec worker {worker_id}: announcing dead operations to {}",
                oprec::url_origin(url)
            ),
        );
    }
    crate::logging::notice(
        "oprec::worker",
        &format!(
            "oprec worker {worker_id}: running {} on {} with transport {}; SIGTERM or ctrl-c drains and stops",
            registry.names().join(", "),
            backend.url,
            oprec::redact_url(&global.transport),
        ),
    );
    let report = if args.exit_when_idle {
        worker.run_until_idle(IDLE_FOR, stop).await
    } else {
        worker.run(stop).await
    };
    let why = if report.idle { "idle" } else { "signal" };
    let s = report.stats;
    output::line!(
        "worker stopped ({why}): claimed {}, succeeded {}, failed {}, vanished {}, released {}, \
         given back {}, stale claims {}, isolated {}, panicked {}, wake-ups received {} \
         (ignored {}, garbage {}), published {}",
        s.claimed,
        s.succeeded,
        s.failed,
        s.vanished,
        report.released,
        report.given_back,
        s.stale_claims,
        s.isolated,
        s.panicked,
        s.wakeups_received,
        s.wakeups_ignored,
        s.garbage_frames,
        s.published,
    )?;
    Ok(())
}
