//! Latency: enqueue → claim at a light steady rate, with the worker process already running.
//! Measured in the database, from the operation's `created_at` (taken by the client just before
//! its insert) to its first attempt's `claimed_at` (the claim's transaction start); the handler
//! starts right after the claim returns.

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use oprec::EnqueueOptions;
use serde::Serialize;
use tokio::time::MissedTickBehavior;

use crate::schema::{Database, with_schema};
use crate::transport::TransportSpec;
use crate::worker_process::WorkerProcess;
use crate::{BenchConfig, Error, Result, noop};

/// Enqueues before measuring: the worker's pool and the broker connections warm up.
const WARM_UP: Duration = Duration::from_secs(1);

/// One transport's latency.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Latency {
    /// `poll`, `redis` or `amqp`.
    pub transport: String,
    /// Enqueues per second asked for.
    pub rate: u32,
    /// Operations measured (after the warm-up).
    pub samples: u64,
    /// Median enqueue → claim, in milliseconds.
    pub p50_ms: f64,
    /// 99th percentile, in milliseconds.
    pub p99_ms: f64,
    /// The slowest, in milliseconds.
    pub max_ms: f64,
}

pub(crate) async fn measure(
    db: &Database,
    config: &BenchConfig,
    spec: &TransportSpec,
    progress: &(dyn Fn(&str) + Sync),
) -> Result<Latency> {
    let label = spec.label();
    let rate = config.latency_rate;
    let concurrency = config.concurrencies.first().copied().unwrap_or(32);
    let latency = with_schema(db, 8, true, async |s| {
        let phase = spec.fresh(concurrency);
        let result = async {
            let client = noop::client(Arc::new(s.store.clone()), phase.connect()?)?;
            db.checkpoint().await;
            let mut worker =
                WorkerProcess::spawn(&config.worker, &s.url, &phase.url, concurrency, false)?;
            worker.ready(Duration::from_secs(30)).await?;
            let mut tick = tokio::time::interval(Duration::from_secs_f64(1.0 / f64::from(rate)));
            tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
            let begin = tokio::time::Instant::now();
            let measure_from: DateTime<Utc> = Utc::now() + chrono::Duration::from_std(WARM_UP).unwrap_or_default();
            let total = WARM_UP + Duration::from_secs(config.latency_secs);
            let mut sent = tokio::task::JoinSet::new();
            let mut i = 0;
            while begin.elapsed() < total {
                tick.tick().await;
                let client = client.clone();
                i += 1;
                sent.spawn(async move {
                    client
                        .enqueue(noop::KIND, noop::payload(i), EnqueueOptions::default())
                        .await
                });
            }
            while let Some(r) = sent.join_next().await {
                r.map_err(|e| Error::Check(format!("an enqueue task failed: {e}")))??;
            }
            drop(client);
            // Wait for the last operations (at most 30 s), then drain and stop the worker.
            let waited = tokio::time::Instant::now();
            while waited.elapsed() < Duration::from_secs(30) {
                let left: i64 = sqlx::query_scalar(
                    "SELECT count(*) FROM operations WHERE status <> 'succeeded'",
                )
                .fetch_one(&s.pool)
                .await?;
                if left == 0 {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            let exited = worker.stop(Duration::from_secs(60)).await?;
            let (samples, p50, p99, max, unfinished): (i64, Option<f64>, Option<f64>, Option<f64>, i64) =
                sqlx::query_as(
                    "SELECT count(*) FILTER (WHERE ms IS NOT NULL),
                            percentile_cont(0.5) WITHIN GROUP (ORDER BY ms),
                            percentile_cont(0.99) WITHIN GROUP (ORDER BY ms),
                            max(ms),
                            count(*) FILTER (WHERE status <> 'succeeded')
                     FROM (SELECT o.status,
                                  extract(epoch FROM a.claimed_at - o.created_at)::float8 * 1000 AS ms
                           FROM operations o
                           LEFT JOIN operation_attempts a ON a.operation_id = o.id AND a.attempt = 1
                           WHERE o.created_at >= $1) x",
                )
                .bind(measure_from)
                .fetch_one(&s.pool)
                .await?;
            if unfinished > 0 || samples == 0 {
                return Err(Error::Check(format!(
                    "after the {label} latency run {unfinished} operations were not succeeded ({samples} measured); worker said: {}",
                    exited.stdout.trim()
                )));
            }
            Ok(Latency {
                transport: label.to_owned(),
                rate,
                samples: samples as u64,
                p50_ms: p50.unwrap_or(0.0),
                p99_ms: p99.unwrap_or(0.0),
                max_ms: max.unwrap_or(0.0),
            })
        }
        .await;
        let cleaned = phase.clean_up().await;
        let latency = result?;
        cleaned?;
        Ok(latency)
    })
    .await?;
    progress(&format!(
        "latency {label}: enqueue → claim at {rate}/s: p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms ({} operations)",
        latency.p50_ms, latency.p99_ms, latency.max_ms, latency.samples
    ));
    Ok(latency)
}
