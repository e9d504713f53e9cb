//! Promotion to dead is never silent. The alerter (on the maintenance leader) claims dead
//! operations not yet announced and hands each to its kind's sink (or the default sinks): a
//! structured tracing event, an HTTP webhook, or anything implementing [`DeadLetterSink`]. One
//! that succeeds is recorded (`alerted_at`), so each promotion is announced once in normal
//! operation (and at least once across a crash: a dead announcer's claims are taken again after
//! their lease); one that fails is tried again later, each time later, up to an hour.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use oprec_core::maintenance::{
    AlertClaimParams, AlertDeferParams, MarkAlertedParams, alert_retry_at,
};
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

/// How long an announcer holds the announcements it claimed before another may take them.
const CLAIM_LEASE_SECS: i64 = 60;

/// What one pass did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AlertReport {
    /// Promotions announced.
    pub announced: u64,
    /// Announcements that failed, put off to their retry time.
    pub deferred: u64,
}

/// One pass: claims the announcements that are due, sends each to its kind's sinks (or the
/// default ones), records the ones sent and puts off the ones that failed with a growing delay
/// ([`alert_retry_at`]), so a sink that is down is tried (and its failure logged) a few times an
/// hour, not on every pass.
pub async fn alert_once(
    store: &dyn MaintenanceStore,
    registry: &Registry,
    config: &AlerterConfig,
) -> oprec_core::Result<AlertReport> {
    let due = store
        .operation_alert_claim(AlertClaimParams {
            limit: config.batch,
            lease: chrono::Duration::seconds(CLAIM_LEASE_SECS),
        })
        .await?;
    let mut done = Vec::with_capacity(due.len());
    let mut failed = Vec::new();
    for d in &due {
        let op = &d.operation;
        let alert = DeadLetter::from(op);
        let sinks = registry
            .get(&op.kind)
            .map(|k| k.dead_letter_sinks())
            .filter(|s| !s.is_empty())
            .unwrap_or(&config.default_sinks);
        let mut error = None;
        for sink in sinks {
            if let Err(e) = sink.announce(&alert).await {
                error = Some(e);
            }
        }
        match error {
            None => done.push(op.id),
            Some(e) => {
                let failures = d.failures + 1;
                let retry_at = alert_retry_at(failures, store.now().await?);
                tracing::warn!(operation = %op.id, error = %e, failures, retry_at = %retry_at,
                    "announcing a dead operation failed; it is tried again later");
                failed.push((op.id, retry_at));
            }
        }
    }
    let report = AlertReport {
        announced: done.len() as u64,
        deferred: failed.len() as u64,
    };
    if !done.is_empty() {
        store
            .operation_mark_alerted(MarkAlertedParams { ids: done })
            .await?;
    }
    if !failed.is_empty() {
        store
            .operation_alert_defer(AlertDeferParams { retries: failed })
            .await?;
    }
    Ok(report)
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
