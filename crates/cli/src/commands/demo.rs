//! `oprec demo`: the retry scenarios on the embedded default with no services. A real `Worker`
//! (with scheduler and rescuer) runs in this process against a simulated provider, on a virtual
//! clock shared by the store, the client and the worker, with the in-memory transport; the driver
//! jumps the clock from event to event so that 13 hours of ladder take about a second. Each
//! scenario's attempts and end state are printed, and the command fails if one ends otherwise
//! than its scenario says it must.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration as StdDuration, Instant};

use chrono::{DateTime, TimeZone, Utc};
use oprec::runtime::{RescuerConfig, SchedulerConfig};
use oprec::store::OperationGetParams;
use oprec::{
    Client, Clock, FullStore, ManualClock, MemoryTransport, Registry, Transport, Worker,
    WorkerConfig,
};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::backend::{Backend, store_error};
use crate::cli::{DemoArgs, Global};
use crate::demo::provider::{self, LADDER, LEASE_SECS, Provider};
use crate::demo::report::{DemoReport, ScenarioReport};
use crate::demo::{driver, scenarios};
use crate::duration::offset;
use crate::output;

/// The most real time the scenarios may take before the demo gives up.
const REAL_TIME_LIMIT: StdDuration = StdDuration::from_secs(60);

/// A worker on short real intervals: the virtual clock, not the intervals, sets the pace.
fn worker_config() -> WorkerConfig {
    WorkerConfig {
        concurrency: 16,
        lease: chrono::Duration::seconds(LEASE_SECS),
        idle_wait: StdDuration::from_millis(20),
        // Suspects are looked for as often as the rest moves: on the default second, a demo
        // slowed by a busy machine lives long enough in real time for a heartbeat (a third of the
        // lease, in real seconds) to renew a hung attempt's lease on the virtual clock.
        suspect_probe: StdDuration::from_millis(20),
        // The hung attempt is released (as a stale, harmless write) when the demo ends.
        drain_timeout: StdDuration::from_millis(200),
        worker_id: "demo-worker".to_owned(),
        scheduler: SchedulerConfig {
            interval: StdDuration::from_millis(20),
            // The economy wakes only kinds a worker was seen running within a minute, judged by
            // the store's clock: on a virtual clock that jumps hours at a time, the demo's own
            // worker would look gone between two of its beats, and nothing would be woken.
            budgeted: false,
            ..SchedulerConfig::default()
        },
        rescuer: RescuerConfig {
            interval: StdDuration::from_millis(20),
            rule: oprec::VanishRule {
                vanish_limit: 3,
                ..oprec::VanishRule::default()
            },
            ..RescuerConfig::default()
        },
        ..WorkerConfig::default()
    }
}

/// Runs the scenarios and prints them.
pub(crate) async fn run(
    global: &Global,
    args: DemoArgs,
    explicit_database: bool,
) -> anyhow::Result<()> {
    let began = Instant::now();
    // Removed when dropped, at the end of this function.
    let dir = tempfile::Builder::new().prefix("oprec-demo-").tempdir()?;
    let url = if explicit_database {
        global.database_url.clone()
    } else {
        format!("sqlite://{}?mode=rwc", dir.path().join("demo.db").display())
    };
    let start = Utc
        .with_ymd_and_hms(2026, 1, 5, 9, 0, 0)
        .single()
        .expect("a valid time");
    let clock = Arc::new(ManualClock::new(start));
    let backend = Backend::connect_with(&url, Some(clock.clone()), global.db_connections).await?;
    let store: Arc<dyn FullStore> = backend.store.clone();
    store.migrate().await.map_err(store_error)?;

    let provider = Arc::new(Provider::new(clock.clone(), start));
    let registry =
        Arc::new(Registry::new().register(provider::kind(provider.clone(), store.clone())));
    let transport: Arc<dyn Transport> = Arc::new(MemoryTransport::new());
    let client = Client::new(store.clone(), Some(transport.clone()), registry.clone())
        .with_clock(clock.clone());
    // Two workers, as a fleet has: while one runs a suspect alone (suspect isolation), the other
    // goes on with the rest of the work.
    let stop = CancellationToken::new();
    let running: Vec<_> = (0..2)
        .map(|n| {
            let config = WorkerConfig {
                worker_id: format!("demo-worker-{n}"),
                ..worker_config()
            };
            let worker = Worker::new(
                store.clone(),
                Some(transport.clone()),
                registry.clone(),
                config,
            )
            .with_clock(clock.clone());
            tokio::spawn(worker.run(stop.clone()))
        })
        .collect();

    let played = play(store.as_ref(), &client, &clock, &provider, start).await;
    let report = played.map(|scenarios| DemoReport {
        database: backend.url.clone(),
        transport: "memory://",
        virtual_start: start,
        ladder_s: LADDER.to_vec(),
        lease_s: LEASE_SECS,
        scenarios,
        virtual_elapsed_s: (clock.now() - start).num_seconds(),
        real_elapsed_ms: began.elapsed().as_millis() as u64,
    });
    if let Ok(report) = &report {
        if args.json {
            output::json(report)?;
        } else {
            output::text(&render(report, explicit_database))?;
        }
    }
    // Stop after printing: the hung attempts are released by the drain, which changes nothing
    // (their claims were taken over) and is not part of the story.
    stop.cancel();
    for r in running {
        let _ = r.await;
    }

    let failed: Vec<&str> = report?
        .scenarios
        .iter()
        .filter(|r| !r.as_expected)
        .map(|r| r.name)
        .collect();
    if !failed.is_empty() {
        anyhow::bail!(
            "{} scenario(s) did not end as they must: {}",
            failed.len(),
            failed.join(", ")
        );
    }
    Ok(())
}

/// Enqueues every scenario, drives the clock until they rest, and reports them.
async fn play(
    store: &dyn FullStore,
    client: &Client,
    clock: &ManualClock,
    provider: &Provider,
    start: DateTime<Utc>,
) -> anyhow::Result<Vec<ScenarioReport>> {
    let scenarios = scenarios::all();
    let mut ids = Vec::with_capacity(scenarios.len());
    let mut hung = HashSet::new();
    for s in &scenarios {
        let e = client
            .enqueue(provider::KIND, &s.payload, s.options(start))
            .await
            .map_err(store_error)?;
        if s.payload.pointer("/script/hang") == Some(&json!(true)) {
            hung.insert(e.id);
        }
        ids.push(e.id);
    }
    driver::run_until_rest(store, clock, &ids, &hung, REAL_TIME_LIMIT).await?;
    let mut reports = Vec::with_capacity(scenarios.len());
    for (s, id) in scenarios.iter().zip(&ids) {
        let detail = store
            .operation_get(OperationGetParams { id: *id })
            .await
            .map_err(store_error)?
            .ok_or_else(|| anyhow::anyhow!("operation {id} disappeared"))?;
        reports.push(ScenarioReport::new(
            s,
            detail,
            provider.effect_key(*id),
            start,
        ));
    }
    Ok(reports)
}

/// The demo as text.
fn render(report: &DemoReport, explicit_database: bool) -> String {
    let mut out = format!(
        "oprec demo: the retry scenarios on {}{}, in-memory wake-ups; a real worker, scheduler and \
         rescuer on a virtual clock from {}\n",
        report.database,
        if explicit_database {
            ""
        } else {
            " (temporary)"
        },
        report.virtual_start,
    );
    out.push_str(&format!(
        "ladder: attempt 1 at once, then after 60 s, 300 s, 1,500 s, 7,500 s and 37,500 s; then \
         terminal. Lease {} s; 3 vanished attempts in a row are a crash loop.\n",
        report.lease_s
    ));
    for r in &report.scenarios {
        out.push_str(&r.render());
    }
    let ok = report.scenarios.iter().filter(|r| r.as_expected).count();
    out.push_str(&format!(
        "\n{ok} of {} scenarios ended as they must: {} of virtual time in {:.1} s\n",
        report.scenarios.len(),
        offset(report.virtual_elapsed_s).trim_start_matches('+'),
        report.real_elapsed_ms as f64 / 1000.0
    ));
    out
}
