//! Pause, postpone and resume: stopping claims and wake-ups of one kind, failure class or
//! dependency (nothing else stops), and starting them again. Resuming a dependency also releases
//! the operations held for its configuration failure: resuming it says the repair is done.

use chrono::{DateTime, Utc};
use oprec_core::operator::{
    AuditEntry, Control, ControlAction, ControlRemoveParams, ControlScope, ControlSetParams,
    CountMatchingParams, OperationFilter, ReleaseParams, WorkerListParams,
};
use oprec_core::{FailureClass, OperatorStore, WORKER_LIVE_SECS};
use serde_json::{Value, json};

use crate::batches::DEFAULT_BATCH;
use crate::filter::{class, name};
use crate::{InputError, Result, Spelling, Who};

/// What a control applies to: one kind, failure class or dependency.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ControlTarget {
    /// Kind, class or dependency.
    pub scope: ControlScope,
    /// Its name.
    pub value: String,
}

impl ControlTarget {
    /// Exactly one of a kind, a class or a dependency, as typed.
    pub fn parse(
        spelling: Spelling,
        kind: Option<&str>,
        class_name: Option<&str>,
        dependency: Option<&str>,
    ) -> Result<Self, InputError> {
        let (scope, value) = match (kind, class_name, dependency) {
            (Some(k), None, None) => (ControlScope::Kind, name(&spelling.label("kind"), k)?),
            (None, Some(c), None) => (
                ControlScope::FailureClass,
                class(&spelling.label("class"), c)?.as_str().to_owned(),
            ),
            (None, None, Some(d)) => (
                ControlScope::Dependency,
                name(&spelling.label("dependency"), d)?,
            ),
            _ => {
                return Err(InputError(format!(
                    "give exactly one of {}, {} or {}",
                    spelling.label("kind"),
                    spelling.label("class"),
                    spelling.label("dependency")
                )));
            }
        };
        Ok(ControlTarget { scope, value })
    }

    /// A scope named as stored (`kind`, `failure_class`, `dependency`) and its value.
    pub fn from_scope(spelling: Spelling, scope: &str, value: &str) -> Result<Self, InputError> {
        let scope: ControlScope = scope.trim().parse().map_err(|_| {
            InputError(format!(
                "{} must be kind, failure_class or dependency",
                spelling.label("scope")
            ))
        })?;
        match scope {
            ControlScope::Kind => Self::parse(spelling, Some(value), None, None),
            ControlScope::FailureClass => Self::parse(spelling, None, Some(value), None),
            ControlScope::Dependency => Self::parse(spelling, None, None, Some(value)),
        }
    }

    /// The operations it covers, as a filter.
    pub fn filter(&self) -> OperationFilter {
        let mut f = OperationFilter::default();
        match self.scope {
            ControlScope::Kind => f.kinds = vec![self.value.clone()],
            ControlScope::FailureClass => f.classes = self.value.parse().into_iter().collect(),
            ControlScope::Dependency => f.dependency = Some(self.value.clone()),
        }
        f
    }

    /// `class transient`, `kind demo.flaky`, `dependency stripe`.
    pub fn describe(&self) -> String {
        let what = match self.scope {
            ControlScope::Kind => "kind",
            ControlScope::FailureClass => "class",
            ControlScope::Dependency => "dependency",
        };
        format!("{what} {}", self.value)
    }

    /// The target as the audit log keeps it.
    pub fn to_json(&self) -> Value {
        json!({"scope": self.scope.as_str(), "value": self.value})
    }

    /// How many unfinished operations it covers now.
    pub async fn in_scope<S: OperatorStore + ?Sized>(&self, store: &S) -> Result<u64> {
        let counts = store
            .operation_count_matching(CountMatchingParams {
                filter: self.filter(),
            })
            .await?;
        Ok(counts
            .iter()
            .filter(|(s, _)| !s.is_terminal())
            .map(|(_, n)| n)
            .sum())
    }
}

/// What setting a control did.
#[derive(Debug)]
pub struct ControlSet {
    /// The control now in force.
    pub control: Control,
    /// Unfinished operations it holds back now.
    pub in_scope: u64,
    /// The audit entry could not be written (the control itself stands).
    pub audit_failure: Option<oprec_core::Error>,
    /// For a kind that no operation has (in any status) and no live worker runs, a typo most
    /// likely: the kinds the store and the workers do know, for the warning. The control stands.
    pub unknown_kind: Option<Vec<String>>,
}

/// For a kind control: `None` when the kind is known (some operation has it, or a live worker
/// runs it), else the kinds that are, sorted. Reads the kept counts and the workers' rows.
async fn unknown_kind<S: OperatorStore + ?Sized>(
    store: &S,
    target: &ControlTarget,
) -> Result<Option<Vec<String>>> {
    if target.scope != ControlScope::Kind {
        return Ok(None);
    }
    let mut known: std::collections::BTreeSet<String> = store
        .operation_count()
        .await?
        .into_iter()
        .filter(|c| c.count > 0)
        .map(|c| c.kind)
        .collect();
    for w in store
        .worker_list(WorkerListParams {
            seen_within: chrono::Duration::seconds(WORKER_LIVE_SECS),
        })
        .await?
    {
        known.extend(w.kinds);
    }
    Ok((!known.contains(&target.value)).then(|| known.into_iter().collect()))
}

/// Pauses (or postpones) `target` until `until` (or until resumed), audited.
pub async fn set<S: OperatorStore + ?Sized>(
    store: &S,
    target: &ControlTarget,
    action: ControlAction,
    until: Option<DateTime<Utc>>,
    who: &Who,
    reason: Option<&str>,
) -> Result<ControlSet> {
    if action == ControlAction::Postpone {
        if target.scope != ControlScope::Dependency {
            return Err(InputError::new(
                "only a dependency is postponed (its operations wait until a time); pause a kind \
                 or a failure class instead",
            )
            .into());
        }
        if until.is_none() {
            return Err(InputError::new(
                "a postponement needs a time to end (until); to stop until resumed, pause instead",
            )
            .into());
        }
    }
    let control = store
        .control_set(ControlSetParams {
            scope: target.scope,
            value: target.value.clone(),
            action,
            until,
            reason: reason.map(str::to_owned),
            actor: who.actor.clone(),
        })
        .await?;
    let in_scope = target.in_scope(store).await?;
    let unknown_kind = unknown_kind(store, target).await?;
    let audit_failure = store
        .audit_insert(AuditEntry {
            actor: who.actor.clone(),
            action: action.as_str().to_owned(),
            filter: target.to_json(),
            affected: in_scope,
            reason: reason.map(str::to_owned),
            details: who.details(json!({"until": until})),
        })
        .await
        .err();
    Ok(ControlSet {
        control,
        in_scope,
        audit_failure,
        unknown_kind,
    })
}

/// What resuming did.
#[derive(Debug, Default)]
pub struct Resumed {
    /// A pause or postponement was in force and is gone.
    pub removed: bool,
    /// For a dependency: held operations whose last failure was a configuration failure,
    /// released (pending again, eligible now).
    pub released_held: Option<u64>,
    /// The audit entry could not be written (the resume itself stands).
    pub audit_failure: Option<oprec_core::Error>,
}

/// Resumes `target`; for a dependency, also releases what its configuration failure held.
/// Resuming what was not paused, with nothing to release, changes nothing and is not audited.
pub async fn resume<S: OperatorStore + ?Sized>(
    store: &S,
    target: &ControlTarget,
    who: &Who,
    reason: Option<&str>,
) -> Result<Resumed> {
    let removed = store
        .control_remove(ControlRemoveParams {
            scope: target.scope,
            value: target.value.clone(),
        })
        .await?;
    let released_held = match target.scope {
        ControlScope::Dependency => Some(release_repaired(store, &target.value).await?),
        _ => None,
    };
    let audit_failure = if removed || released_held.unwrap_or(0) > 0 {
        store
            .audit_insert(AuditEntry {
                actor: who.actor.clone(),
                action: "resume".to_owned(),
                filter: target.to_json(),
                affected: released_held.unwrap_or(0),
                reason: reason.map(str::to_owned),
                details: who
                    .details(json!({"control_removed": removed, "released_held": released_held})),
            })
            .await
            .err()
    } else {
        None
    };
    Ok(Resumed {
        removed,
        released_held,
        audit_failure,
    })
}

/// Returns held operations of `dependency` whose last failure was a configuration failure to
/// pending, in batches; returns how many.
async fn release_repaired<S: OperatorStore + ?Sized>(store: &S, dependency: &str) -> Result<u64> {
    let filter = OperationFilter {
        dependency: Some(dependency.to_owned()),
        classes: vec![FailureClass::Configuration],
        ..OperationFilter::default()
    };
    let mut released = 0;
    loop {
        let n = store
            .operation_release(ReleaseParams {
                filter: filter.clone(),
                limit: DEFAULT_BATCH as u32,
            })
            .await?;
        released += n;
        if n < DEFAULT_BATCH {
            return Ok(released);
        }
    }
}
