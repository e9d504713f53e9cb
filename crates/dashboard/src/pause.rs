//! Pausing and resuming: `POST /controls/pause` stops claims and wake-ups by kind, failure class
//! or dependency, until a time or until resumed (or postpones a dependency until a time); `POST /controls/resume` lifts it, and resuming a
//! dependency also releases what was held for its configuration failure (as `oprec resume`
//! does). Both land in the audit log with their actor.

use std::collections::HashMap;

use axum::Form;
use axum::extract::rejection::FormRejection;
use axum::response::{IntoResponse, Redirect, Response};
use oprec_core::operator::ControlAction;
use oprec_ops::controls::{self, ControlTarget};
use oprec_ops::{Spelling, Who, time};

use crate::State;
use crate::authorize::{Caller, authorize_form};
use crate::error::{AppError, store};

/// The kind, class or dependency a form names.
fn target(m: &HashMap<String, String>) -> Result<ControlTarget, AppError> {
    let g = |k: &str| m.get(k).map(|s| s.trim()).unwrap_or("");
    Ok(ControlTarget::from_scope(
        Spelling::Fields,
        g("scope"),
        g("value"),
    )?)
}

/// `POST /controls/pause`.
pub(crate) async fn pause(
    state: State,
    caller: Caller,
    form: Result<Form<HashMap<String, String>>, FormRejection>,
) -> Result<Response, AppError> {
    let (actor, m) = authorize_form(&state, &caller, form)?;
    let target = target(&m)?;
    let now = state.store.now().await.map_err(store)?;
    let until = match m.get("until").map(|s| s.trim()).unwrap_or("") {
        "" => None,
        u => Some(time::future("until", u, now)?),
    };
    let reason = oprec_ops::reason(
        "reason",
        m.get("reason").map(|r| r.trim()).filter(|r| !r.is_empty()),
    )?;
    let action = match m.get("action").map(|s| s.trim()).unwrap_or("") {
        "" | "pause" => ControlAction::Pause,
        "postpone" => ControlAction::Postpone,
        _ => {
            return Err(AppError::bad_request(
                "A control either pauses or postpones. Nothing was changed.",
            ));
        }
    };
    let who = Who::named("actor", &actor, Some("dashboard"))?;
    let done = controls::set(
        state.store.as_ref(),
        &target,
        action,
        until,
        &who,
        reason.as_deref(),
    )
    .await?;
    if let Some(e) = done.audit_failure {
        tracing::error!(error = %e, "the pause's audit entry could not be written");
    }
    Ok(Redirect::to(&format!(
        "/controls?done={}&n={}",
        action.as_str(),
        done.in_scope
    ))
    .into_response())
}

/// `POST /controls/resume`.
pub(crate) async fn resume(
    state: State,
    caller: Caller,
    form: Result<Form<HashMap<String, String>>, FormRejection>,
) -> Result<Response, AppError> {
    let (actor, m) = authorize_form(&state, &caller, form)?;
    let target = target(&m)?;
    let who = Who::named("actor", &actor, Some("dashboard"))?;
    // Resuming a dependency says its repair is done: what its configuration failure held is
    // released too (as `oprec resume` does).
    let done = controls::resume(state.store.as_ref(), &target, &who, None).await?;
    if let Some(e) = done.audit_failure {
        tracing::error!(error = %e, "the resume's audit entry could not be written");
    }
    let page = if done.removed {
        "resume"
    } else {
        "resume-none"
    };
    Ok(Redirect::to(&format!("/controls?done={page}")).into_response())
}
