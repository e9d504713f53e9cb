//! Pausing and resuming: `POST /controls/pause` stops claims and wake-ups by kind, failure class
//! or dependency, until a time or until resumed; `POST /controls/resume` lifts it, and resuming a
//! dependency also releases what was held for its configuration failure (as `oprec resume`
//! does). Both land in the audit log with their actor.

use std::collections::HashMap;

use axum::Form;
use axum::extract::rejection::FormRejection;
use axum::response::{IntoResponse, Redirect, Response};
use oprec_core::operator::{
    AuditEntry, ControlAction, ControlScope, ControlSetParams, OperationFilter, ReleaseParams,
};
use oprec_core::{FailureClass, OperatorStore};
use serde_json::json;

use crate::State;
use crate::authorize::{Caller, authorize_form};
use crate::error::{AppError, store};
use crate::filters::{duration, moment};

/// Operations moved per store call.
pub(crate) const BATCH: u64 = 500;

fn scope_of(s: &str) -> Result<ControlScope, AppError> {
    s.trim()
        .parse()
        .map_err(|_| AppError::bad_request("Pause by kind, failure_class or dependency."))
}

/// The checked value of a control: a class must be a failure class.
fn value_of(scope: ControlScope, v: &str) -> Result<String, AppError> {
    let v = v.trim();
    if v.is_empty() || v.chars().count() > 200 || v.chars().any(char::is_control) {
        return Err(AppError::bad_request(
            "Name the kind, failure class or dependency to pause (at most 200 printable \
             characters).",
        ));
    }
    if scope == ControlScope::FailureClass {
        let c: FailureClass = v.parse().map_err(|e: oprec_core::ParseEnumError| {
            AppError::bad_request(format!(
                "“{}” is not a failure class; use one of: {}.",
                e.value, e.expected
            ))
        })?;
        return Ok(c.as_str().to_owned());
    }
    Ok(v.to_owned())
}

fn filter_of(scope: ControlScope, value: &str) -> OperationFilter {
    let mut f = OperationFilter::default();
    match scope {
        ControlScope::Kind => f.kinds = vec![value.to_owned()],
        ControlScope::FailureClass => f.classes = value.parse().into_iter().collect(),
        ControlScope::Dependency => f.dependency = Some(value.to_owned()),
    }
    f
}

/// Unfinished operations a control covers.
async fn in_scope(store: &dyn OperatorStore, f: &OperationFilter) -> Result<u64, AppError> {
    Ok(store
        .operation_count_matching(f)
        .await
        .map_err(store_err)?
        .iter()
        .filter(|(s, _)| !s.is_terminal())
        .map(|(_, n)| n)
        .sum())
}

fn store_err(e: oprec_core::Error) -> AppError {
    store(e)
}

/// `POST /controls/pause`.
pub(crate) async fn pause(
    state: State,
    caller: Caller,
    form: Result<Form<HashMap<String, String>>, FormRejection>,
) -> Result<Response, AppError> {
    let (actor, m) = authorize_form(&state, &caller, form)?;
    let g = |k: &str| m.get(k).map(|s| s.trim()).unwrap_or("");
    let scope = scope_of(g("scope"))?;
    let value = value_of(scope, g("value"))?;
    let now = state.store.now().await.map_err(store)?;
    let until = match g("until") {
        "" => None,
        u => match duration(u) {
            Some(d) => Some(now + d),
            None => Some(
                moment("until", u, now)?
                    .filter(|t| *t > now)
                    .ok_or_else(|| AppError::bad_request("“Until” must be in the future."))?,
            ),
        },
    };
    let reason = Some(g("reason").to_owned()).filter(|r| !r.is_empty());
    state
        .store
        .control_set(ControlSetParams {
            scope,
            value: value.clone(),
            action: ControlAction::Pause,
            until,
            reason: reason.clone(),
            actor: actor.clone(),
        })
        .await
        .map_err(store)?;
    let affected = in_scope(state.store.as_ref(), &filter_of(scope, &value)).await?;
    state
        .store
        .audit_insert(AuditEntry {
            actor,
            action: "pause".into(),
            filter: json!({"scope": scope.as_str(), "value": value}),
            affected,
            reason,
            details: json!({"until": until, "via": "dashboard"}),
        })
        .await
        .map_err(store)?;
    Ok(Redirect::to(&format!("/controls?done=pause&n={affected}")).into_response())
}

/// `POST /controls/resume`.
pub(crate) async fn resume(
    state: State,
    caller: Caller,
    form: Result<Form<HashMap<String, String>>, FormRejection>,
) -> Result<Response, AppError> {
    let (actor, m) = authorize_form(&state, &caller, form)?;
    let g = |k: &str| m.get(k).map(|s| s.trim()).unwrap_or("");
    let scope = scope_of(g("scope"))?;
    let value = value_of(scope, g("value"))?;
    let removed = state
        .store
        .control_remove(scope, &value)
        .await
        .map_err(store)?;
    // Resuming a dependency says its repair is done: release what its configuration failure held.
    let mut released = 0;
    if scope == ControlScope::Dependency {
        let f = OperationFilter {
            dependency: Some(value.clone()),
            classes: vec![FailureClass::Configuration],
            ..OperationFilter::default()
        };
        loop {
            let n = state
                .store
                .operation_release(ReleaseParams {
                    filter: f.clone(),
                    limit: BATCH as u32,
                })
                .await
                .map_err(store)?;
            released += n;
            if n < BATCH {
                break;
            }
        }
    }
    if removed || released > 0 {
        state
            .store
            .audit_insert(AuditEntry {
                actor,
                action: "resume".into(),
                filter: json!({"scope": scope.as_str(), "value": value}),
                affected: released,
                reason: None,
                details: json!({"control_removed": removed, "released_held": released, "via": "dashboard"}),
            })
            .await
            .map_err(store)?;
    }
    let done = if removed { "resume" } else { "resume-none" };
    Ok(Redirect::to(&format!("/controls?done={done}")).into_response())
}
