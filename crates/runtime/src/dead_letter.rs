//! Promotion to dead is never silent. The alerter finds dead operations not yet announced and
//! hands each to its kind's sink (or the default sinks): a structured tracing event, an HTTP
//! webhook, or anything implementing [`DeadLetterSink`]. An announcement that fails is retried on
//! the next pass; one that succeeds is recorded (`alerted_at`), so each promotion is announced once.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use oprec_core::maintenance::{DeadUnalertedParams, MarkAlertedParams};
use oprec_core::{MaintenanceStore, Operation};
use serde::Serialize;
use tokio_util::sync::CancellationToken;

use crate::Registry;

/// Where a promotion to dead is announced.
#[async_trait]
pub trait DeadLetterSink: Send + Sync + std::fmt::Debug + 'static {
    /// Announces one dead operation; an error means "try again later".
    async fn announce(&self, alert: &DeadLetter) -> anyhow::Result<()>;
}

/// What an announcement says: enough to act without opening the database.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DeadLetter {
    /// The operation.
    pub id: oprec_core::OperationId,
    /// Its kind.
    pub kind: String,
    /// Why it is dead.
    pub reason: Option<String>,
    /// The last failure class.
    pub class: Option<String>,
    /// The final error.
    pub error: Option<oprec_core::OperationError>,
    /// Attempts made.
    pub attempts: u32,
    /// The code version of the last attempt.
    pub code_version: Option<String>,
    /// When it died.
    pub terminal_at: Option<chrono::DateTime<chrono::Utc>>,
}

impl From<&Operation> for DeadLetter {
    fn from(o: &Operation) -> Self {
        DeadLetter {
            id: o.id,
            kind: o.kind.clone(),
            reason: o.terminal_reason.map(|r| r.to_string()),
            class: o.last_failure_class.map(|c| c.to_string()),
            error: o.last_error.clone(),
            attempts: o.attempt,
            code_version: o.code_version.clone(),
            terminal_at: o.terminal_at,
        }
    }
}

/// Announces as a structured `tracing` event at error level (target `oprec::dead_letter`).
#[derive(Clone, Copy, Debug, Default)]
pub struct TracingSink;

#[async_trait]
impl DeadLetterSink for TracingSink {
    async fn announce(&self, a: &DeadLetter) -> anyhow::Result<()> {
        tracing::error!(
            target: "oprec::dead_letter",
            operation = %a.id,
            kind = %a.kind,
            reason = a.reason.as_deref().unwrap_or("unknown"),
            class = a.class.as_deref().unwrap_or("none"),
            attempts = a.attempts,
            error = a.error.as_ref().map(|e| e.summary.as_str()).unwrap_or(""),
            next_action = a.error.as_ref().and_then(|e| e.next_action.as_deref()).unwrap_or(""),
            "operation promoted to dead"
        );
        Ok(())
    }
}

/// How the alerter runs.
#[derive(Clone, Debug)]
pub struct AlerterConfig {
    /// How often to look for unannounced promotions.
    pub interval: Duration,
    /// The most announcements per pass.
    pub batch: u32,
    /// Sinks for kinds that have none of their own.
    pub default_sinks: Vec<Arc<dyn DeadLetterSink>>,
}

impl Default for AlerterConfig {
    fn default() -> Self {
        AlerterConfig {
            interval: Duration::from_secs(2),
            batch: 500,
            default_sinks: vec![Arc::new(TracingSink)],
        }
    }
}

/// One pass: announces what is due; returns how many were announced.
pub async fn alert_once(
    store: &dyn MaintenanceStore,
    registry: &Registry,
    config: &AlerterConfig,
) -> oprec_core::Result<u64> {
    let dead = store
        .operation_dead_unalerted(DeadUnalertedParams {
            limit: config.batch,
        })
        .await?;
    let mut done = Vec::with_capacity(dead.len());
    for op in &dead {
        let alert = DeadLetter::from(op);
        let sinks = registry
            .get(&op.kind)
            .map(|k| k.dead_letter_sinks())
            .filter(|s| !s.is_empty())
            .unwrap_or(&config.default_sinks);
        let mut ok = true;
        for sink in sinks {
            if let Err(e) = sink.announce(&alert).await {
                ok = false;
                tracing::warn!(operation = %op.id, error = %e, "announcing a dead operation failed; will retry");
            }
        }
        if ok {
            done.push(op.id);
        }
    }
    let n = done.len() as u64;
    if !done.is_empty() {
        store
            .operation_mark_alerted(MarkAlertedParams { ids: done })
            .await?;
    }
    Ok(n)
}

/// Runs passes until `stop` is cancelled.
pub(crate) async fn run(
    store: Arc<dyn MaintenanceStore>,
    registry: Arc<Registry>,
    config: AlerterConfig,
    stop: CancellationToken,
) {
    loop {
        if let Err(e) = alert_once(store.as_ref(), &registry, &config).await {
            tracing::warn!(error = %e, "dead-letter alert pass failed");
        }
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(config.interval) => {}
        }
    }
}
