//! The alert log (`alerts`): what the fleet told an owner, to which route, and whether it
//! arrived. Three events are told: a promotion to dead, an operation held for a configuration
//! failure (rejected credentials: nothing repeats it until the owner repairs the configuration),
//! and a dependency paused because such a failure named it. Each is recorded once across the
//! fleet (one row per `subject`, a unique key), sent by the maintenance leader, retried with a
//! growing delay ([`alert_retry_at`](crate::maintenance::alert_retry_at)) until a route accepts
//! it, and kept so that `oprec alerts` and the dashboard show what was told to whom.
//!
//! Where an alert goes is decided here ([`AlertRoute::pick`]): the kind's own route, else the
//! dependency's, else the default one.

use chrono::{DateTime, Duration, Utc};
use serde::Serialize;

use crate::status::named_enum;
use crate::{OperationId, Result};

named_enum! {
    /// What an alert tells.
    AlertEvent, "alert event" {
        /// An operation was promoted to dead.
        Dead => "dead",
        /// An operation was held for a configuration failure.
        Held => "held",
        /// A dependency was paused because a configuration failure named it.
        Paused => "paused",
    }
}

named_enum! {
    /// Where an alert stands.
    AlertStatus, "alert status" {
        /// Recorded, not sent yet.
        Pending => "pending",
        /// A route accepted it.
        Sent => "sent",
        /// The last try failed; it is tried again at `due_at`.
        Failed => "failed",
    }
}

/// Where an alert goes: the most specific route that exists.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "scope", content = "name", rename_all = "snake_case")]
pub enum AlertRoute {
    /// The kind's own route.
    Kind(String),
    /// The dependency's route.
    Dependency(String),
    /// The route of everything else.
    Default,
}

impl AlertRoute {
    /// The route of an alert about `kind` (if any) calling `dependency` (if any): the kind's
    /// route when it has one, else the dependency's, else the default one. A pause of a
    /// dependency has no kind, so it goes to the dependency's owner.
    pub fn pick(
        kind: Option<&str>,
        dependency: Option<&str>,
        kind_routed: impl Fn(&str) -> bool,
        dependency_routed: impl Fn(&str) -> bool,
    ) -> AlertRoute {
        if let Some(k) = kind.filter(|k| kind_routed(k)) {
            return AlertRoute::Kind(k.to_owned());
        }
        if let Some(d) = dependency.filter(|d| dependency_routed(d)) {
            return AlertRoute::Dependency(d.to_owned());
        }
        AlertRoute::Default
    }
}

impl std::fmt::Display for AlertRoute {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AlertRoute::Kind(k) => write!(f, "kind:{k}"),
            AlertRoute::Dependency(d) => write!(f, "dependency:{d}"),
            AlertRoute::Default => f.write_str("default"),
        }
    }
}

/// One row of the alert log.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AlertEntry {
    /// The row.
    pub id: i64,
    /// What it tells.
    pub event: AlertEvent,
    /// What makes it one alert across the fleet (`held:<operation>:<attempt>`, ...).
    pub subject: String,
    /// The operation it is about, if any.
    pub operation_id: Option<OperationId>,
    /// Its kind, if any.
    pub kind: Option<String>,
    /// The dependency, if any.
    pub dependency: Option<String>,
    /// What happened, in a line.
    pub summary: String,
    /// What the owner should do.
    pub next_action: Option<String>,
    /// The route it went to (`kind:…`, `dependency:…`, `default`), once tried.
    pub route: Option<String>,
    /// Where that route sends, shown without secrets (a webhook's scheme and host).
    pub target: Option<String>,
    /// Pending, sent or failed.
    pub status: AlertStatus,
    /// Sends tried.
    pub tries: u32,
    /// When it is (next) due to be sent.
    pub due_at: DateTime<Utc>,
    /// Why the last send failed; `send_error` in JSON, so that it is never read as an
    /// operation's `last_error` (the record's structured error, which `summary` reports).
    #[serde(rename = "send_error")]
    pub last_error: Option<String>,
    /// When the event happened.
    pub source_at: DateTime<Utc>,
    /// When it was recorded.
    pub created_at: DateTime<Utc>,
    /// When a route accepted it.
    pub sent_at: Option<DateTime<Utc>>,
}

/// An alert to record (or, for one already sent by its own bookkeeping, a delivery to log).
#[derive(Clone, Debug, PartialEq)]
pub struct NewAlert {
    /// What it tells.
    pub event: AlertEvent,
    /// What makes it one alert across the fleet: recording the same subject again changes
    /// nothing but a delivery's outcome.
    pub subject: String,
    /// The operation it is about, if any.
    pub operation_id: Option<OperationId>,
    /// Its kind, if any.
    pub kind: Option<String>,
    /// The dependency, if any.
    pub dependency: Option<String>,
    /// What happened, in a line.
    pub summary: String,
    /// What the owner should do.
    pub next_action: Option<String>,
    /// When the event happened.
    pub source_at: DateTime<Utc>,
    /// A delivery already made (dead-letter announcements keep their own bookkeeping on the
    /// operation and are logged here after each try); `None` records a pending alert.
    pub delivery: Option<AlertDelivery>,
}

/// How one send went.
#[derive(Clone, Debug, PartialEq)]
pub struct AlertDelivery {
    /// The route it went to.
    pub route: String,
    /// Where, without secrets.
    pub target: Option<String>,
    /// `None`: accepted. `Some((error, retry_at))`: failed, tried again at `retry_at`.
    pub failure: Option<(String, DateTime<Utc>)>,
}

/// Record alerts (see [`NewAlert`]).
#[derive(Clone, Debug)]
pub struct AlertRecordParams {
    /// The alerts.
    pub alerts: Vec<NewAlert>,
}

/// Record a `held` alert for each attempt that failed for configuration since the newest one
/// recorded (less `slack`, for attempts committed late), at most `limit`, oldest first.
#[derive(Clone, Copy, Debug)]
pub struct AlertHoldsParams {
    /// The most alerts recorded.
    pub limit: u32,
    /// How far before the newest recorded hold to look again.
    pub slack: Duration,
}

/// Take recorded alerts due to be sent, each the caller's for `lease`.
#[derive(Clone, Copy, Debug)]
pub struct AlertDueParams {
    /// The most alerts.
    pub limit: u32,
    /// How long before another sender may take the same alert.
    pub lease: Duration,
}

/// Record how sends went.
#[derive(Clone, Debug)]
pub struct AlertSettleParams {
    /// Each alert (by id) and how its send went.
    pub results: Vec<(i64, AlertDelivery)>,
}

/// Remove sent alerts older than `before`, at most `limit`.
#[derive(Clone, Copy, Debug)]
pub struct AlertTrimParams {
    /// Sent before this time.
    pub before: DateTime<Utc>,
    /// The most rows removed.
    pub limit: u32,
}

/// List the alert log, newest first.
#[derive(Clone, Debug, Default)]
pub struct AlertListParams {
    /// Only these events.
    pub events: Vec<AlertEvent>,
    /// Only these statuses.
    pub statuses: Vec<AlertStatus>,
    /// Only alerts about this kind.
    pub kind: Option<String>,
    /// Only alerts about this dependency.
    pub dependency: Option<String>,
    /// Only rows older than this id (paging).
    pub before_id: Option<i64>,
    /// The most rows.
    pub limit: u32,
}

/// What a pause opened by a configuration failure says, and what an owner does about it.
pub fn configuration_pause_reason(summary: &str, operation: OperationId) -> String {
    format!("configuration failure: {summary} (operation {operation})")
}

/// The next action of an operation held for a configuration failure, when its error states none.
pub fn held_next_action(operation: OperationId) -> String {
    format!(
        "repair the configuration (credentials), then release it: oprec release --id {operation} --yes"
    )
}

/// The next action of a dependency paused by a configuration failure.
pub fn paused_next_action(dependency: &str) -> String {
    format!(
        "repair the configuration of {dependency}, then resume it (which also releases its \
         operations held for configuration): oprec resume --dependency {dependency}"
    )
}

/// The subject of the alert for a dependency pause set at `created_at`.
pub fn paused_subject(dependency: &str, created_at: DateTime<Utc>) -> String {
    format!(
        "paused:dependency:{dependency}:{}",
        created_at.timestamp_micros()
    )
}

/// The subject of the dead-letter announcement of `operation` that died at `terminal_at`.
pub fn dead_subject(operation: OperationId, terminal_at: Option<DateTime<Utc>>) -> String {
    format!(
        "dead:{operation}:{}",
        terminal_at.map_or(0, |t| t.timestamp_micros())
    )
}

/// Checks a page size given by a person.
pub fn check_list_limit(limit: u32) -> Result<u32> {
    if limit == 0 || limit > 10_000 {
        return Err(crate::Error::InvalidInput(format!(
            "limit must be between 1 and 10000 (got {limit})"
        )));
    }
    Ok(limit)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_most_specific_route_wins() {
        let kinds = |k: &str| k == "mail.send";
        let deps = |d: &str| d == "stripe";
        assert_eq!(
            AlertRoute::pick(Some("mail.send"), Some("stripe"), kinds, deps),
            AlertRoute::Kind("mail.send".into())
        );
        assert_eq!(
            AlertRoute::pick(Some("charge"), Some("stripe"), kinds, deps),
            AlertRoute::Dependency("stripe".into())
        );
        assert_eq!(
            AlertRoute::pick(None, Some("stripe"), kinds, deps),
            AlertRoute::Dependency("stripe".into())
        );
        assert_eq!(
            AlertRoute::pick(Some("charge"), Some("ledger"), kinds, deps),
            AlertRoute::Default
        );
        assert_eq!(
            AlertRoute::pick(None, None, kinds, deps),
            AlertRoute::Default
        );
        assert_eq!(AlertRoute::Kind("a".into()).to_string(), "kind:a");
        assert_eq!(
            AlertRoute::Dependency("b".into()).to_string(),
            "dependency:b"
        );
    }

    #[test]
    fn names_round_trip() {
        for e in AlertEvent::ALL {
            assert_eq!(e.as_str().parse::<AlertEvent>().unwrap(), *e);
        }
        for s in AlertStatus::ALL {
            assert_eq!(s.as_str().parse::<AlertStatus>().unwrap(), *s);
        }
        assert!("dead; --".parse::<AlertEvent>().is_err());
    }

    #[test]
    fn subjects_tell_one_event_from_another() {
        let id = OperationId::new();
        let t = DateTime::from_timestamp(1_700_000_000, 123_000).unwrap();
        assert_ne!(dead_subject(id, Some(t)), dead_subject(id, None));
        assert_eq!(
            paused_subject("stripe", t),
            "paused:dependency:stripe:1700000000000123"
        );
        assert!(check_list_limit(0).is_err());
        assert!(check_list_limit(10_001).is_err());
        assert_eq!(check_list_limit(50).unwrap(), 50);
    }
}
