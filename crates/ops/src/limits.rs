//! Limits across the fleet as operators set and read them (`oprec limit`, `oprec limits`,
//! `oprec stats`, the dashboard): at most N running at once and at most R attempts started per
//! second, for a kind or a dependency, over every worker; audited like every other action.

use oprec_core::limit::{LimitRemoveParams, LimitSetParams};
use oprec_core::operator::{AuditEntry, StatsReport};
use oprec_core::{FullStore, Limit, LimitScope, LimitUse};
use serde_json::{Value, json};

use crate::filter::name;
use crate::number::count;
use crate::{InputError, Result, Spelling, Who};

/// What a limit applies to: one kind or one dependency.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LimitTarget {
    /// Kind or dependency.
    pub scope: LimitScope,
    /// Its name.
    pub value: String,
}

impl LimitTarget {
    /// Exactly one of a kind or a dependency, as typed.
    pub fn parse(
        spelling: Spelling,
        kind: Option<&str>,
        dependency: Option<&str>,
    ) -> Result<Self, InputError> {
        let (scope, value) = match (kind, dependency) {
            (Some(k), None) => (LimitScope::Kind, name(&spelling.label("kind"), k)?),
            (None, Some(d)) => (
                LimitScope::Dependency,
                name(&spelling.label("dependency"), d)?,
            ),
            _ => {
                return Err(InputError(format!(
                    "give exactly one of {} or {}",
                    spelling.label("kind"),
                    spelling.label("dependency")
                )));
            }
        };
        Ok(LimitTarget { scope, value })
    }

    /// The target in a few words: `kind mail.send`.
    pub fn describe(&self) -> String {
        format!("{} {}", self.scope, self.value)
    }

    /// The target as the audit log keeps it.
    pub fn to_json(&self) -> Value {
        json!({"scope": self.scope.as_str(), "value": self.value})
    }
}

/// What setting or removing a limit did.
#[derive(Debug)]
pub struct LimitChange<T> {
    /// The limit now in force (set), or whether one was removed.
    pub outcome: T,
    /// The audit entry could not be written (the change itself stands).
    pub audit_failure: Option<oprec_core::Error>,
}

/// Sets (or replaces) the limit on `target`, audited. At least one of `max_running` and
/// `per_second`; neither may be 0 (a pause stops work, and says so).
pub async fn set<S: FullStore + ?Sized>(
    store: &S,
    target: &LimitTarget,
    max_running: Option<u32>,
    per_second: Option<u32>,
    who: &Who,
    reason: Option<&str>,
) -> Result<LimitChange<Limit>> {
    let params = LimitSetParams {
        scope: target.scope,
        value: target.value.clone(),
        max_running,
        per_second,
        reason: reason.map(str::to_owned),
        actor: who.actor.clone(),
    };
    params.check().map_err(|e| InputError(e.to_string()))?;
    let limit = store.limit_set(params).await?;
    let audit_failure = store
        .audit_insert(AuditEntry {
            actor: who.actor.clone(),
            action: "limit".to_owned(),
            filter: target.to_json(),
            affected: 0,
            reason: reason.map(str::to_owned),
            details: who.details(json!({
                "max_running": max_running,
                "per_second": per_second,
            })),
        })
        .await
        .err();
    Ok(LimitChange {
        outcome: limit,
        audit_failure,
    })
}

/// Removes the limit on `target`, audited when there was one.
pub async fn remove<S: FullStore + ?Sized>(
    store: &S,
    target: &LimitTarget,
    who: &Who,
    reason: Option<&str>,
) -> Result<LimitChange<bool>> {
    let removed = store
        .limit_remove(LimitRemoveParams {
            scope: target.scope,
            value: target.value.clone(),
        })
        .await?;
    let audit_failure = if removed {
        store
            .audit_insert(AuditEntry {
                actor: who.actor.clone(),
                action: "unlimit".to_owned(),
                filter: target.to_json(),
                affected: 0,
                reason: reason.map(str::to_owned),
                details: who.details(json!({})),
            })
            .await
            .err()
    } else {
        None
    };
    Ok(LimitChange {
        outcome: removed,
        audit_failure,
    })
}

/// Every limit with its use now.
pub async fn list<S: FullStore + ?Sized>(store: &S) -> Result<Vec<LimitUse>> {
    Ok(store.limit_list().await?)
}

/// A limit's bounds in a few words: `5 running, 50/s`.
pub fn bounds(limit: &Limit) -> String {
    let mut parts = Vec::new();
    if let Some(n) = limit.max_running {
        parts.push(format!("{n} running"));
    }
    if let Some(r) = limit.per_second {
        parts.push(format!("{r}/s"));
    }
    parts.join(", ")
}

/// A limit's use now in a few words: `3 of 5 running, 12 of 50 started in the last second`.
pub fn usage(u: &LimitUse) -> String {
    let mut parts = Vec::new();
    if let Some(n) = u.limit.max_running {
        parts.push(format!("{} of {n} running", u.running));
    } else {
        parts.push(format!("{} running", u.running));
    }
    if let Some(r) = u.limit.per_second {
        parts.push(format!(
            "{} of {r} started in the last second",
            u.started_last_second
        ));
    }
    parts.join(", ")
}

/// Beside a dependency's limit, the attempts against it in the last hour and their rate per
/// second (the seeds' "rate by dependency"): `7,200 attempts (2.0/s)`. `None` for a kind's limit.
pub fn last_hour(u: &LimitUse, stats: &StatsReport) -> Option<String> {
    match u.limit.scope {
        LimitScope::Dependency => {
            let n = stats
                .attempts_last_hour_by_dependency
                .get(&u.limit.value)
                .copied()
                .unwrap_or(0);
            Some(format!(
                "{} attempts ({:.1}/s)",
                count(n),
                n as f64 / 3600.0
            ))
        }
        LimitScope::Kind => None,
    }
}
