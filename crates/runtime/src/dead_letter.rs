//! Alerts to the owner. The alerter (on the maintenance leader) tells three events: a
//! promotion to dead, an operation held for a configuration failure (rejected credentials), and
//! a dependency paused because such a failure named it. Each goes to the most specific route
//! ([`AlertRoute::pick`]): the kind's own sinks ([`Kind::dead_letter_sink`](crate::Kind), or a
//! route in [`AlertRoutes`]), else the dependency's route, else the default sinks.
//!
//! Promotions to dead are claimed from the operations (`alerted_at`), sent, and each delivery is
//! logged in the alert log. Holds are read from the attempt history and recorded in the alert log
//! once across the fleet (one row per hold), and so is a pause the alerter opens; the log's
//! pending rows are then sent. Every send that fails is tried again later, each time later, up to
//! an hour ([`alert_retry_at`]); `oprec alerts` shows what was told to whom.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use oprec_core::alert::{
    AlertDelivery, AlertDueParams, AlertEntry, AlertEvent, AlertHoldsParams, AlertRecordParams,
    AlertRoute, AlertSettleParams, AlertTrimParams, NewAlert, configuration_pause_reason,
    dead_subject, held_next_action, paused_next_action, paused_subject,
};
use oprec_core::maintenance::{
    AlertClaimParams, AlertDeferParams, MarkAlertedParams, alert_retry_at,
};
use oprec_core::operator::{AuditEntry, ControlAction, ControlScope, ControlSetParams};
use oprec_core::{FullStore, Operation};
use serde::Serialize;
use tokio_util::sync::CancellationToken;

use crate::Registry;

/// Where alerts are sent.
#[async_trait]
pub trait AlertSink: Send + Sync + std::fmt::Debug + 'static {
    /// Sends one alert; an error means "try again later".
    async fn announce(&self, alert: &Alert) -> anyhow::Result<()>;

    /// Where it sends, without secrets, for the alert log (a webhook's scheme and host).
    fn target(&self) -> String {
        "custom sink".to_owned()
    }
}

/// The name this trait had when it told only promotions to dead.
pub use AlertSink as DeadLetterSink;

/// What an alert says: enough to act without opening the database. As JSON (a webhook's body),
/// the fields of its event and `"event": "dead" | "held" | "paused"`.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Alert {
    /// An operation was promoted to dead.
    Dead(DeadLetter),
    /// An operation was held for a configuration failure.
    Held(OwnerAlert),
    /// A dependency was paused because a configuration failure named it.
    Paused(OwnerAlert),
}

impl Alert {
    /// The kind it is about, if any.
    pub fn kind(&self) -> Option<&str> {
        match self {
            Alert::Dead(d) => Some(&d.kind),
            Alert::Held(o) | Alert::Paused(o) => o.kind.as_deref(),
        }
    }

    /// The dependency it is about, if any.
    pub fn dependency(&self) -> Option<&str> {
        match self {
            Alert::Dead(d) => d.dependency.as_deref(),
            Alert::Held(o) | Alert::Paused(o) => o.dependency.as_deref(),
        }
    }

    /// The action the record states, if any.
    pub fn next_action(&self) -> Option<&str> {
        match self {
            Alert::Dead(d) => d.next_action.as_deref(),
            Alert::Held(o) | Alert::Paused(o) => o.next_action.as_deref(),
        }
    }
}

/// A hold or a pause, as told.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OwnerAlert {
    /// The alert log's row.
    pub alert_id: i64,
    /// The operation (held, or whose failure opened the pause).
    pub operation: Option<oprec_core::OperationId>,
    /// Its kind (none for a pause).
    pub kind: Option<String>,
    /// The dependency.
    pub dependency: Option<String>,
    /// What happened.
    pub summary: String,
    /// What to do.
    pub next_action: Option<String>,
    /// When it happened.
    pub at: chrono::DateTime<chrono::Utc>,
}

impl From<&AlertEntry> for OwnerAlert {
    fn from(e: &AlertEntry) -> Self {
        OwnerAlert {
            alert_id: e.id,
            operation: e.operation_id,
            kind: if e.event == AlertEvent::Paused {
                None
            } else {
                e.kind.clone()
            },
            dependency: e.dependency.clone(),
            summary: e.summary.clone(),
            next_action: e.next_action.clone(),
            at: e.source_at,
        }
    }
}

/// A promotion to dead, as told.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DeadLetter {
    /// The operation.
    pub id: oprec_core::OperationId,
    /// Its kind.
    pub kind: String,
    /// The dependency it calls, if any.
    pub dependency: Option<String>,
    /// Why it is dead.
    pub reason: Option<String>,
    /// The last failure class.
    pub class: Option<String>,
    /// The final error.
    pub error: Option<oprec_core::OperationError>,
    /// What to do, as the final error states it.
    pub next_action: Option<String>,
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
            dependency: o.dependency.clone(),
            reason: o.terminal_reason.map(|r| r.to_string()),
            class: o.last_failure_class.map(|c| c.to_string()),
            error: o.last_error.clone(),
            next_action: o.last_error.as_ref().and_then(|e| e.next_action.clone()),
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
impl AlertSink for TracingSink {
    async fn announce(&self, alert: &Alert) -> anyhow::Result<()> {
        match alert {
            Alert::Dead(a) => tracing::error!(
                target: "oprec::dead_letter",
                operation = %a.id,
                kind = %a.kind,
                reason = a.reason.as_deref().unwrap_or("unknown"),
                class = a.class.as_deref().unwrap_or("none"),
                attempts = a.attempts,
                error = a.error.as_ref().map(|e| e.summary.as_str()).unwrap_or(""),
                next_action = a.next_action.as_deref().unwrap_or(""),
                "operation promoted to dead"
            ),
            Alert::Held(a) => tracing::error!(
                target: "oprec::alert",
                operation = a.operation.map(|o| o.to_string()).unwrap_or_default(),
                kind = a.kind.as_deref().unwrap_or(""),
                dependency = a.dependency.as_deref().unwrap_or(""),
                error = %a.summary,
                next_action = a.next_action.as_deref().unwrap_or(""),
                "operation held for a configuration failure"
            ),
            Alert::Paused(a) => tracing::error!(
                target: "oprec::alert",
                dependency = a.dependency.as_deref().unwrap_or(""),
                reason = %a.summary,
                next_action = a.next_action.as_deref().unwrap_or(""),
                "dependency paused by a configuration failure"
            ),
        }
        Ok(())
    }

    fn target(&self) -> String {
        "log".to_owned()
    }
}

/// Routes by kind and by dependency, beside the kinds' own sinks
/// ([`Kind::dead_letter_sink`](crate::Kind)).
#[derive(Clone, Debug, Default)]
pub struct AlertRoutes {
    /// A kind's sinks.
    pub kinds: HashMap<String, Vec<Arc<dyn AlertSink>>>,
    /// A dependency's sinks.
    pub dependencies: HashMap<String, Vec<Arc<dyn AlertSink>>>,
}

/// How the alerter runs.
#[derive(Clone, Debug)]
pub struct AlerterConfig {
    /// How often to look for unannounced promotions.
    pub interval: Duration,
    /// The most announcements per pass.
    pub batch: u32,
    /// Sinks for alerts no route claims.
    pub default_sinks: Vec<Arc<dyn AlertSink>>,
    /// Routes by kind and by dependency.
    pub routes: AlertRoutes,
    /// Whether a configuration failure that names a dependency pauses the dependency (nothing
    /// calling it can succeed until its configuration is repaired), alerted to its owner.
    pub pause_on_configuration: bool,
    /// How long sent alerts are kept in the log.
    pub keep_sent: chrono::Duration,
}

impl Default for AlerterConfig {
    fn default() -> Self {
        AlerterConfig {
            interval: Duration::from_secs(2),
            batch: 500,
            default_sinks: vec![Arc::new(TracingSink)],
            routes: AlertRoutes::default(),
            pause_on_configuration: false,
            keep_sent: chrono::Duration::days(30),
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
    /// Holds for a configuration failure recorded.
    pub held: u64,
    /// Dependencies paused by a configuration failure.
    pub paused: u64,
    /// Alerts from the log sent.
    pub sent: u64,
    /// Alerts from the log whose send failed, put off to their retry time.
    pub failed: u64,
}

/// The sinks of `route`.
fn sinks_of<'a>(
    route: &AlertRoute,
    registry: &'a Registry,
    config: &'a AlerterConfig,
) -> &'a [Arc<dyn AlertSink>] {
    match route {
        AlertRoute::Kind(k) => registry
            .get(k)
            .map(|k| k.dead_letter_sinks())
            .filter(|s| !s.is_empty())
            .or_else(|| config.routes.kinds.get(k).map(Vec::as_slice))
            .unwrap_or(&config.default_sinks),
        AlertRoute::Dependency(d) => config
            .routes
            .dependencies
            .get(d)
            .map(Vec::as_slice)
            .unwrap_or(&config.default_sinks),
        AlertRoute::Default => &config.default_sinks,
    }
}

/// Sends `alert` to its route; the route's name, its targets and the first error.
async fn send(
    alert: &Alert,
    registry: &Registry,
    config: &AlerterConfig,
) -> (AlertRoute, String, Option<anyhow::Error>) {
    let route = AlertRoute::pick(
        alert.kind(),
        alert.dependency(),
        |k| {
            registry
                .get(k)
                .is_some_and(|k| !k.dead_letter_sinks().is_empty())
                || config.routes.kinds.contains_key(k)
        },
        |d| config.routes.dependencies.contains_key(d),
    );
    let sinks = sinks_of(&route, registry, config);
    let mut error = None;
    for sink in sinks {
        if let Err(e) = sink.announce(alert).await {
            error.get_or_insert(e);
        }
    }
    let targets = sinks
        .iter()
        .map(|s| s.target())
        .collect::<Vec<_>>()
        .join(", ");
    (route, targets, error)
}

/// One pass: announces the promotions to dead that are due (and logs each delivery), records
/// the new holds for a configuration failure (pausing their dependency when configured to), and
/// sends what the alert log has due. A send that fails is put off with a growing delay
/// ([`alert_retry_at`]), so a sink that is down is tried (and its failure logged) a few times an
/// hour, not on every pass.
pub async fn alert_once(
    store: &dyn FullStore,
    registry: &Registry,
    config: &AlerterConfig,
) -> oprec_core::Result<AlertReport> {
    // One clock read per pass: retry times and the trim cutoff are judged from it.
    let now = store.now().await?;
    let mut report = announce_dead(store, registry, config, now).await?;
    let holds = store
        .alert_holds_record(AlertHoldsParams {
            limit: config.batch,
            slack: chrono::Duration::seconds(60),
        })
        .await?;
    report.held = holds.len() as u64;
    if config.pause_on_configuration {
        report.paused = pause_dependencies(store, &holds, now).await?;
    }
    let due = store
        .alert_due(AlertDueParams {
            limit: config.batch,
            lease: chrono::Duration::seconds(CLAIM_LEASE_SECS),
        })
        .await?;
    let mut results = Vec::with_capacity(due.len());
    for entry in &due {
        let mut told = OwnerAlert::from(entry);
        if entry.event == AlertEvent::Held && told.next_action.is_none() {
            told.next_action = entry.operation_id.map(held_next_action);
        }
        let alert = match entry.event {
            AlertEvent::Paused => Alert::Paused(told),
            _ => Alert::Held(told),
        };
        let (route, target, error) = send(&alert, registry, config).await;
        let failure = match error {
            None => {
                report.sent += 1;
                None
            }
            Some(e) => {
                report.failed += 1;
                let retry_at = alert_retry_at(entry.tries + 1, now);
                tracing::warn!(alert = entry.id, event = %entry.event, route = %route, error = %e,
                    retry_at = %retry_at, "sending an alert failed; it is tried again later");
                Some((format!("{e:#}"), retry_at))
            }
        };
        results.push((
            entry.id,
            AlertDelivery {
                route: route.to_string(),
                target: Some(target),
                failure,
            },
        ));
    }
    if !results.is_empty() {
        store.alert_settle(AlertSettleParams { results }).await?;
    }
    let before = now - config.keep_sent;
    store
        .alert_trim(AlertTrimParams {
            before,
            limit: 1000,
        })
        .await?;
    Ok(report)
}

/// Claims the promotions to dead that are due, sends each to its route, records the ones sent
/// and puts off the ones that failed; logs every delivery in the alert log.
async fn announce_dead(
    store: &dyn FullStore,
    registry: &Registry,
    config: &AlerterConfig,
    now: chrono::DateTime<chrono::Utc>,
) -> oprec_core::Result<AlertReport> {
    let due = store
        .operation_alert_claim(AlertClaimParams {
            limit: config.batch,
            lease: chrono::Duration::seconds(CLAIM_LEASE_SECS),
        })
        .await?;
    let mut done = Vec::with_capacity(due.len());
    let mut failed = Vec::new();
    let mut log = Vec::with_capacity(due.len());
    for d in &due {
        let op = &d.operation;
        let dead = DeadLetter::from(op);
        let summary = dead
            .error
            .as_ref()
            .map(|e| e.summary.clone())
            .unwrap_or_else(|| format!("dead: {}", dead.reason.as_deref().unwrap_or("unknown")));
        let next_action = dead.next_action.clone();
        let (route, target, error) = send(&Alert::Dead(dead), registry, config).await;
        let failure = match error {
            None => {
                done.push(op.id);
                None
            }
            Some(e) => {
                let failures = d.failures + 1;
                let retry_at = alert_retry_at(failures, now);
                tracing::warn!(operation = %op.id, error = %e, failures, retry_at = %retry_at,
                    "announcing a dead operation failed; it is tried again later");
                failed.push((op.id, retry_at));
                Some((format!("{e:#}"), retry_at))
            }
        };
        log.push(NewAlert {
            event: AlertEvent::Dead,
            subject: dead_subject(op.id, op.terminal_at),
            operation_id: Some(op.id),
            kind: Some(op.kind.clone()),
            dependency: op.dependency.clone(),
            summary,
            next_action,
            source_at: op.terminal_at.unwrap_or(op.updated_at),
            delivery: Some(AlertDelivery {
                route: route.to_string(),
                target: Some(target),
                failure,
            }),
        });
    }
    let report = AlertReport {
        announced: done.len() as u64,
        deferred: failed.len() as u64,
        ..AlertReport::default()
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
    if !log.is_empty() {
        store
            .alert_record(AlertRecordParams { alerts: log })
            .await?;
    }
    Ok(report)
}

/// Who opens a pause for a configuration failure, in the controls and the audit log.
pub const CONFIGURATION_PAUSE_ACTOR: &str = "oprec (configuration failure)";

/// Pauses each dependency a new hold names that no control holds back yet, audits it, and
/// records the pause's alert; returns how many were paused.
async fn pause_dependencies(
    store: &dyn FullStore,
    holds: &[AlertEntry],
    now: chrono::DateTime<chrono::Utc>,
) -> oprec_core::Result<u64> {
    let named: Vec<&AlertEntry> = holds.iter().filter(|h| h.dependency.is_some()).collect();
    if named.is_empty() {
        return Ok(0);
    }
    let mut controlled: std::collections::HashSet<String> = store
        .control_list()
        .await?
        .into_iter()
        .filter(|c| c.scope == ControlScope::Dependency && c.in_force(now))
        .map(|c| c.value)
        .collect();
    let mut paused = 0;
    for hold in named {
        let Some(dependency) = hold.dependency.clone() else {
            continue;
        };
        if !controlled.insert(dependency.clone()) {
            continue;
        }
        let Some(operation) = hold.operation_id else {
            continue;
        };
        let reason = configuration_pause_reason(&hold.summary, operation);
        let control = store
            .control_set(ControlSetParams {
                scope: ControlScope::Dependency,
                value: dependency.clone(),
                action: ControlAction::Pause,
                until: None,
                reason: Some(reason.clone()),
                actor: CONFIGURATION_PAUSE_ACTOR.to_owned(),
            })
            .await?;
        if let Err(e) = store
            .audit_insert(AuditEntry {
                actor: CONFIGURATION_PAUSE_ACTOR.to_owned(),
                action: ControlAction::Pause.as_str().to_owned(),
                filter: serde_json::json!({"scope": "dependency", "value": dependency}),
                affected: 0,
                reason: Some(reason.clone()),
                details: serde_json::json!({"operation": operation, "kind": hold.kind}),
            })
            .await
        {
            tracing::warn!(error = %e, dependency, "the pause stands but its audit entry could not be written");
        }
        tracing::warn!(dependency, %operation, "a configuration failure paused its dependency");
        store
            .alert_record(AlertRecordParams {
                alerts: vec![NewAlert {
                    event: AlertEvent::Paused,
                    subject: paused_subject(&dependency, control.created_at),
                    operation_id: Some(operation),
                    kind: hold.kind.clone(),
                    dependency: Some(dependency.clone()),
                    summary: reason,
                    next_action: Some(paused_next_action(&dependency)),
                    source_at: control.created_at,
                    delivery: None,
                }],
            })
            .await?;
        paused += 1;
    }
    Ok(paused)
}

/// Runs passes until `stop` is cancelled.
pub(crate) async fn run(
    store: Arc<dyn FullStore>,
    registry: Arc<Registry>,
    config: AlerterConfig,
    stop: CancellationToken,
) {
    loop {
        if let Err(e) = alert_once(store.as_ref(), &registry, &config).await {
            tracing::warn!(error = %e, "alert pass failed");
        }
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(config.interval) => {}
        }
    }
}
