//! Controls: pause or resume claims and wake-ups by kind, failure class or dependency (resuming a
//! dependency also releases what was held for its configuration failure, as `oprec resume`
//! does). The page also carries the quarantine's filter form, which leads to
//! [`crate::quarantine_page`].

use std::collections::HashMap;

use axum::Form;
use axum::extract::Query;
use axum::extract::rejection::{FormRejection, QueryRejection};
use axum::response::{IntoResponse, Redirect, Response};
use maud::{Markup, html};
use oprec_core::operator::{
    AuditEntry, Control, ControlAction, ControlScope, ControlSetParams, OperationFilter,
    ReleaseParams,
};
use oprec_core::{FailureClass, OperatorStore};
use serde::Deserialize;
use serde_json::json;

use crate::State;
use crate::authorize::{Caller, authorize_form};
use crate::error::{AppError, store};
use crate::filters::{duration, moment};
use crate::html::{badge, count, or_dash, when};
use crate::layout::{Nav, Page};
use crate::quarantine_page::quarantine_filter_form;
use crate::viewer::Viewer;

/// Operations moved per store call.
pub(crate) const BATCH: u64 = 500;

/// Which message to show after an action (a fixed list: no text from the address reaches the
/// page).
#[derive(Deserialize, Default)]
pub(crate) struct Done {
    #[serde(default)]
    done: String,
    #[serde(default)]
    n: Option<u64>,
}

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

/// `GET /controls`.
pub(crate) async fn page(
    state: State,
    viewer: Viewer,
    q: Result<Query<Done>, QueryRejection>,
) -> Result<Page, AppError> {
    let done = q.map(|q| q.0).unwrap_or_default();
    let now = state.store.now().await.map_err(store)?;
    let controls = state.store.control_list().await.map_err(store)?;
    let n = done.n.map(count).unwrap_or_default();
    let notice = match done.done.as_str() {
        "pause" => {
            format!("Paused. {n} unfinished operations in scope are neither claimed nor woken.")
        }
        "resume" => "Resumed: the operations are claimed and woken again.".to_owned(),
        "resume-none" => "Nothing to resume: no control was in force there.".to_owned(),
        "quarantine" => format!("Quarantined {n} operations: they are held until released."),
        _ => String::new(),
    };
    let body = html! {
        div.head {
            h1 { "Controls" }
            p.muted {
                "A pause stops claims and wake-ups of the operations it names, nothing else; \
                 resuming starts them again. Quarantine moves pending operations to held until \
                 they are released."
            }
        }
        @if !notice.is_empty() {
            p.notice.good #notice { (notice) }
        }
        section.panel {
            h2 { "In force" }
            (controls_table(&controls, &viewer, now))
        }
        div.cols {
            section.panel {
                h2 { "Pause" }
                @match viewer.why_not("/controls") {
                    Some(why) => p.notice { (why) },
                    None => (pause_form(&viewer)),
                }
            }
            section.panel {
                h2 { "Quarantine" }
                p.muted.small {
                    "Count the pending operations a filter matches first; nothing moves until you \
                     confirm."
                }
                (quarantine_filter_form())
            }
        }
    };
    Ok(Page::new("Controls", Nav::Controls, &viewer).body(body))
}

/// The controls in force, each with its resume button when the viewer can act.
fn controls_table(
    controls: &[Control],
    viewer: &Viewer,
    now: chrono::DateTime<chrono::Utc>,
) -> Markup {
    if controls.is_empty() {
        return html! { p.muted #no-controls { "Nothing is paused or postponed." } };
    }
    let can_act = viewer.why_not("/controls").is_none();
    html! {
        table.grid #controls {
            thead {
                tr {
                    th { "Scope" } th { "Value" } th { "Action" } th { "Until" } th { "By" }
                    th { "Since" } th { "Reason" } th {}
                }
            }
            tbody {
                @for c in controls {
                    tr {
                        td { (c.scope.as_str()) }
                        td { (c.value) }
                        td { (badge(c.action.as_str())) }
                        td {
                            @match c.until {
                                Some(u) => (when(u, now)),
                                None => "until resumed",
                            }
                        }
                        td { (c.actor) }
                        td { (when(c.created_at, now)) }
                        td { (or_dash(c.reason.as_deref())) }
                        td.right {
                            @if can_act {
                                form.inline method="post" action="/controls/resume" {
                                    (viewer.csrf_field())
                                    input type="hidden" name="scope" value=(c.scope.as_str());
                                    input type="hidden" name="value" value=(c.value);
                                    button.small type="submit" { "Resume" }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// Pause by kind, failure class or dependency, until a time or until resumed.
fn pause_form(viewer: &Viewer) -> Markup {
    html! {
        form.stack #pause-form method="post" action="/controls/pause" {
            (viewer.csrf_field())
            div.row {
                label {
                    "By "
                    select name="scope" {
                        option value="kind" { "kind" }
                        option value="failure_class" { "failure class" }
                        option value="dependency" { "dependency" }
                    }
                }
                label {
                    "Name "
                    input name="value" required maxlength="200"
                        placeholder="e.g. email.send or stripe";
                }
            }
            label {
                "Until "
                input name="until" placeholder="until resumed, or 2h, or 2026-01-05T18:00";
            }
            label {
                "Reason "
                input name="reason" maxlength="500" placeholder="why, for the audit log";
            }
            div.actions { button.primary type="submit" { "Pause" } }
        }
    }
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
